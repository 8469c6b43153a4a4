/*
 * A fuzz target for the parsers (ops, csv, json, mtrace, heaptrack) and
 * what follows a parse (lower bound, greedy-size, validation). With
 * libFuzzer (meson -Dfuzz=true, clang):
 *   build-fuzz/tests/fuzz_trace tests/fuzz/corpus
 * Without it, the same file builds a replayer that runs every file given on
 * the command line through the target (a regression test over the corpus).
 */
#include <stdio.h>
#include <stdlib.h>

#include "allocscope/allocscope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fmts[] = {"ops", "csv", "json", "mtrace",
					      "heaptrack"};
	/* The first byte picks the format, the rest is the text. */
	if (size == 0)
		return 0;
	const char *fmt = fmts[data[0] % 5];
	struct as_trace *t = NULL;
	struct as_diag d;
	if (as_trace_parse("fuzz", (const char *)data + 1, size - 1, fmt, &t,
			   &d) != AS_OK)
		return 0;
	(void)as_trace_lower_bound(t);
	if (t->nbuffers < 5000) {
		struct as_plan *p = NULL;
		struct as_report r;
		if (as_strategy_run("greedy-size", t, NULL, &p, &d) == AS_OK &&
		    (as_validate(t, p, &r) != AS_OK || !r.valid))
			abort(); /* greedy-size plans must always validate */
		as_plan_destroy(p);
	}
	as_trace_destroy(t);
	return 0;
}

#ifndef AS_LIBFUZZER
#include <dirent.h>

static int run_file(const char *path)
{
	static uint8_t buf[1 << 20];
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(buf + 1, 1, sizeof(buf) - 1, f);
	fclose(f);
	for (uint8_t k = 0; k < 5; k++) {
		buf[0] = k;
		LLVMFuzzerTestOneInput(buf, n + 1);
	}
	return 1;
}

/* Arguments are files or directories of files. */
int main(int argc, char **argv)
{
	int files = 0;
	for (int i = 1; i < argc; i++) {
		DIR *dp = opendir(argv[i]);
		if (!dp) {
			if (run_file(argv[i]) < 0)
				return 2;
			files++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(dp))) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i],
				 e->d_name);
			if (run_file(path) > 0)
				files++;
		}
		closedir(dp);
	}
	printf("1..1\n%s 1 - every corpus file parses or is refused without "
	       "a crash (%d files)\n",
	       files ? "ok" : "not ok", files);
	return files ? 0 : 1;
}
#endif
