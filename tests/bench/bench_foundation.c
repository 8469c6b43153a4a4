/*
 * Foundation benchmark driver (not a test).
 *
 *   bench_foundation gen N FILE        write a MiniMalloc CSV of N buffers
 *   bench_foundation STAGE FILE        time one stage: parse, lower_bound,
 *                                      greedy-size, validate
 *
 * Prints "stage,buffers,seconds,buffers_per_s,max_rss_bytes_per_buffer".
 * Each stage runs in its own process; the peak resident memory is reset
 * (/proc/self/clear_refs) just before the measured stage, so it counts the
 * trace the stage works on plus what the stage itself holds.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "allocscope/allocscope.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Give freed memory back first (glibc keeps it), then reset the peak. */
static void reset_peak_rss(void)
{
	malloc_trim(0);
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

/* Peak resident bytes since the last reset (VmHWM). */
static double peak_rss(void)
{
	char line[256];
	double kb = 0;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb == 0) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		kb = (double)ru.ru_maxrss;
	}
	return kb * 1024.0;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Lifetimes mostly short, some long; sizes from a few common classes. */
static int gen(uint64_t n, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return 2;
	static const uint64_t classes[] = {64,    256,    1024,    4096,
					   65536, 262144, 1048576, 4194304};
	fputs("id,lower,upper,size\n", f);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t start = i + rnd() % 16;
		uint64_t len = rnd() % 10 == 0 ? 1 + rnd() % 2000 : 1 + rnd() % 50;
		uint64_t size = rnd() % 3 ? classes[rnd() % 8]
					  : 1 + rnd() % 1000000;
		fprintf(f, "%llu,%llu,%llu,%llu\n", (unsigned long long)i,
			(unsigned long long)start,
			(unsigned long long)(start + len),
			(unsigned long long)size);
	}
	return fclose(f) ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 3) {
		fprintf(stderr, "usage: bench_foundation gen N FILE | "
				"bench_foundation STAGE FILE\n");
		return 2;
	}
	if (strcmp(argv[1], "gen") == 0)
		return gen(strtoull(argv[2], NULL, 10), argv[3]);
	const char *stage = argv[1], *path = argv[2];
	struct as_trace *t;
	struct as_diag d;
	double t0 = now();
	if (as_trace_load(path, "csv", &t, &d) != AS_OK) {
		char buf[1024];
		fprintf(stderr, "%s\n", as_diag_text(&d, buf, sizeof(buf)));
		return 2;
	}
	double t1 = now(), secs = t1 - t0;
	uint64_t sink = 0;
	struct as_plan *p = NULL;
	if (strcmp(stage, "parse") != 0)
		reset_peak_rss();
	if (strcmp(stage, "lower_bound") == 0) {
		sink = as_trace_lower_bound(t);
		secs = now() - t1;
	} else if (strcmp(stage, "greedy-size") == 0) {
		if (as_strategy_run("greedy-size", t, NULL, &p, &d) != AS_OK)
			return 2;
		secs = now() - t1;
		sink = as_plan_peak(p, t, -1);
	} else if (strcmp(stage, "validate") == 0) {
		/* A plan that is valid by construction: every buffer above
		 * the previous one. Validation costs the same on any plan. */
		p = as_plan_create(t);
		uint64_t top = 0;
		for (uint32_t i = 0; p && i < t->nbuffers; i++) {
			p->offset[i] = top;
			top += t->buffers[i].size;
		}
		struct as_report r;
		reset_peak_rss();
		double t2 = now();
		if (!p || as_validate(t, p, &r) != AS_OK || !r.valid)
			return 1;
		secs = now() - t2;
		sink = r.violations;
	} else if (strcmp(stage, "parse") != 0) {
		fprintf(stderr, "unknown stage %s\n", stage);
		return 2;
	}
	printf("%s,%u,%.3f,%.0f,%.1f,%llu\n", stage, t->nbuffers, secs,
	       t->nbuffers / (secs > 0 ? secs : 1e-9),
	       peak_rss() / t->nbuffers,
	       (unsigned long long)sink);
	as_plan_destroy(p);
	as_trace_destroy(t);
	return 0;
}
