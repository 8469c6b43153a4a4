/*
 * What the unit tests share, once: running a strategy on a trace written as
 * text with every-event checks and validating the plan (struct test_run),
 * reading a plan by buffer name, capturing dump lines, seeded randomness and
 * random traces. Header-only (static inline), after tap.h.
 */
#ifndef AS_TEST_HELPERS_H
#define AS_TEST_HELPERS_H

#include "allocscope/allocscope.h"
#include "tap.h"

/* Lines an allocator emits (dumps), kept as one text. */
struct capture {
	char text[16384];
	size_t used;
};

static inline void capture_line(void *ctx, const char *line)
{
	struct capture *c = ctx;
	int w = snprintf(c->text + c->used, sizeof(c->text) - c->used, "%s\n",
			 line);
	if (w > 0 && c->used + (size_t)w < sizeof(c->text))
		c->used += (size_t)w;
}

struct test_run {
	struct as_trace *t;
	struct as_plan *p;
	struct capture dump;
	int err;
	struct as_diag d;
	struct as_report rep;
};

/*
 * Parse `text` (named `name`: its extension picks the format), run `spec`
 * with the allocator's check after every event, and validate the plan; an
 * invalid plan fails the test. r->err is the run's result.
 */
static inline void test_run(struct test_run *r, const char *spec,
			    const char *name, const char *text)
{
	memset(r, 0, sizeof(*r));
	if (as_trace_parse(name, text, strlen(text), NULL, &r->t,
			   &r->d) != AS_OK) {
		printf("#   parse: %llu: %s\n", (unsigned long long)r->d.line,
		       r->d.msg);
		tap_cur_failed = 1;
		return;
	}
	struct as_runner_options h = {.emit = capture_line,
				      .ctx = &r->dump,
				      .check_every_event = true};
	r->err = as_strategy_run(spec, r->t, &h, &r->p, &r->d);
	if (r->err != AS_OK)
		return;
	CHECK(as_validate(r->t, r->p, &r->rep) == AS_OK);
	if (!r->rep.valid) {
		char buf[512];
		printf("#   %s invalid: %s\n", spec,
		       as_violation_text(r->t, r->p, &r->rep.first[0], buf,
					 sizeof(buf)));
		tap_cur_failed = 1;
	}
}

/* The run succeeded: report its error otherwise. */
static inline bool test_run_ok(const struct test_run *r)
{
	if (r->err == AS_OK && r->p)
		return true;
	printf("#   run failed: %s\n", r->d.msg);
	tap_cur_failed = 1;
	return false;
}

static inline void test_run_done(struct test_run *r)
{
	as_plan_destroy(r->p);
	as_trace_destroy(r->t);
}

/* The trace `text` read as if from file `name` (format NULL: detected, as
 * by name and content); NULL when refused, with *d saying why. */
static inline struct as_trace *test_parse(const char *name, const char *text,
					  const char *format,
					  struct as_diag *d)
{
	struct as_trace *t = NULL;
	if (as_trace_parse(name, text, strlen(text), format, &t, d) != AS_OK)
		return NULL;
	return t;
}

/* The last buffer named `name`, or -1. */
static inline int64_t test_buffer(const struct as_trace *t, const char *name)
{
	for (uint32_t i = t ? t->nbuffers : 0; i-- > 0;)
		if (strcmp(as_trace_buffer_name(t, i), name) == 0)
			return i;
	return -1;
}

/* The offset the run's plan gave `name` (AS_NO_OFFSET - 1 when none). */
static inline uint64_t test_offset(const struct test_run *r, const char *name)
{
	int64_t i = test_buffer(r->t, name);
	return i < 0 || !r->p ? AS_NO_OFFSET - 1 : r->p->offset[i];
}

/* A plan statistic, or -1. */
static inline double test_stat(const struct as_plan *p, const char *key)
{
	for (uint32_t i = 0; p && i < p->nstats; i++)
		if (strcmp(p->stats[i].key, key) == 0)
			return p->stats[i].value;
	return -1;
}

/* The dump holds `lines` (consecutive); print the dump otherwise. */
static inline void test_dump_has(const struct test_run *r, const char *lines)
{
	if (strstr(r->dump.text, lines))
		return;
	printf("#   dump lacks '%s':\n", lines);
	for (const char *l = r->dump.text; *l;) {
		const char *e = strchr(l, '\n');
		printf("#     %.*s\n", (int)(e - l), l);
		l = e + 1;
	}
	tap_cur_failed = 1;
}

/* The next number of a seeded splitmix64 sequence. */
static inline uint64_t test_rand(uint64_t *state)
{
	uint64_t x = *state += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * A random ops trace over `pools` pools (spaces): allocations of random
 * sizes (some empty), frees, and case boundaries. NULL on failure.
 */
static inline struct as_trace *test_random_pools_trace(uint64_t seed,
						       int pools, int ops)
{
	size_t cap = (size_t)ops * 64 + 64, len = 0;
	char *text = malloc(cap);
	bool live[256] = {false};
	if (!text)
		return NULL;
	for (int i = 0; i < ops; i++) {
		uint64_t r = test_rand(&seed);
		int k = (int)(r % 256);
		if (i % 700 == 699) {
			len += (size_t)snprintf(text + len, cap - len,
						"config n=%d\n", i);
			memset(live, 0, sizeof(live));
		} else if (live[k]) {
			len += (size_t)snprintf(text + len, cap - len,
						"free b%d\n", k);
			live[k] = false;
		} else {
			uint64_t size = (r >> 20) % 8 == 0 ? 0 : (r >> 24) % 5000;
			len += (size_t)snprintf(text + len, cap - len,
						"alloc b%d %llu pool=p%d\n", k,
						(unsigned long long)size,
						(int)((r >> 40) % (uint64_t)pools));
			live[k] = true;
		}
	}
	struct as_trace *t = NULL;
	struct as_diag d;
	if (as_trace_parse("r.ops", text, len, "ops", &t, &d) != AS_OK)
		t = NULL;
	free(text);
	return t;
}

/* The path of `rel` in the source tree (AS_SOURCE_DIR, else "."). */
static inline const char *test_source_path(char *buf, size_t len,
					   const char *rel)
{
	const char *src = getenv("AS_SOURCE_DIR");
	snprintf(buf, len, "%s/%s", src ? src : ".", rel);
	return buf;
}

#endif
