/*
 * A tiny TAP producer for the test executables. Each test is a function
 * whose name is a sentence; TEST_RUN prints "ok N - name" or "not ok". Checks
 * never use assert(): they stay under NDEBUG and report file:line.
 */
#ifndef AS_TAP_H
#define AS_TAP_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed, tap_cur_failed;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("#   %s:%d: check failed: %s\n", __FILE__,  \
			       __LINE__, #cond);                           \
			tap_cur_failed = 1;                                \
		}                                                          \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                 \
	do {                                                               \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);           \
		if (a_ != b_) {                                            \
			printf("#   %s:%d: %s == %" PRIu64 ", expected %s "  \
			       "== %" PRIu64 "\n",                         \
			       __FILE__, __LINE__, #a, a_, #b, b_);        \
			tap_cur_failed = 1;                                \
		}                                                          \
	} while (0)

#define CHECK_STR(a, b)                                                    \
	do {                                                               \
		const char *a_ = (a), *b_ = (b);                           \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                   \
			printf("#   %s:%d: \"%s\" != \"%s\"\n", __FILE__,    \
			       __LINE__, a_ ? a_ : "(null)",               \
			       b_ ? b_ : "(null)");                        \
			tap_cur_failed = 1;                                \
		}                                                          \
	} while (0)

#define TEST_RUN(fn)                                                       \
	do {                                                               \
		tap_cur_failed = 0;                                        \
		fn();                                                      \
		tap_n++;                                                   \
		printf("%sok %d - %s\n", tap_cur_failed ? "not " : "",     \
		       tap_n, #fn);                                        \
		tap_failed += tap_cur_failed;                              \
	} while (0)

#define TEST_SKIP(fn, why)                                                 \
	do {                                                               \
		tap_n++;                                                   \
		printf("ok %d - %s # SKIP %s\n", tap_n, #fn, why);         \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* The shared material beside the checkout, or NULL when it is absent. */
static inline const char *tap_shared_dir(void)
{
	const char *d = getenv("AS_SHARED_DIR");
	FILE *f;
	char probe[1024];
	if (!d || !*d)
		return NULL;
	snprintf(probe, sizeof(probe), "%s/README.md", d);
	f = fopen(probe, "r");
	if (!f)
		return NULL;
	fclose(f);
	return d;
}

#endif
