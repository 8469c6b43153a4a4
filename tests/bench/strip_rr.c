/*
 * Reference for the strip benchmark (tests/bench/strip_curve.sh):
 * a randomized-restart search in the manner of idealloc's: many orders, each
 * placed by first fit (the lowest offset that fits among the placed buffers
 * sharing its time), the lowest peak kept.
 *
 *   strip_rr TRACE SECONDS [SEED]
 *
 * The first order is greedy-size's (largest first); every later one sorts by
 * size times a random factor exp(s * g), g standard normal and s drawn per
 * restart from [0, 1], so orders range from near-greedy to scrambled. One
 * address space (the trace's first). Prints "peak lower_bound restarts
 * seconds", the peak the best order reached within SECONDS of placing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/allocscope.h"
#include "core/internal.h"
#include "strategies/place/place.h"

static uint64_t rng = 1;

static uint64_t next(void)
{
	return as_splitmix64(&rng);
}

static double uniform(void)
{
	return (double)(next() >> 11) / 9007199254740992.0;
}

static double gauss(void)
{
	double u = uniform(), v = uniform();
	return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

struct keyed {
	const double *key;
};

static bool by_key(uint32_t a, uint32_t b, const void *ctx)
{
	const double *key = ((const struct keyed *)ctx)->key;
	return key[a] > key[b] || (key[a] == key[b] && a < b);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: strip_rr TRACE SECONDS [SEED]\n");
		return 2;
	}
	double budget = atof(argv[2]) * 1000.0;
	rng = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	struct as_trace *t;
	struct as_diag d;
	if (as_trace_load(argv[1], NULL, &t, &d) != AS_OK) {
		fprintf(stderr, "%s\n", d.msg);
		return 2;
	}
	struct as_problem pb;
	if (as_problem_init(&pb, t, 0) != AS_OK)
		return 2;
	struct as_placer *pl = as_placer_create(&pb);
	uint32_t *order = malloc((pb.n + 1) * sizeof(*order));
	double *key = malloc((pb.n + 1) * sizeof(*key));
	uint64_t *off = malloc((pb.n + 1) * sizeof(*off));
	if (!pl || !order || !key || !off)
		return 2;
	double t0 = as_now_ms();
	uint64_t best = UINT64_MAX, restarts = 0;
	while (restarts == 0 || as_now_ms() - t0 < budget) {
		double s = restarts ? uniform() : 0.0;
		for (uint32_t i = 0; i < pb.n; i++) {
			order[i] = i;
			key[i] = (double)pb.r[i].size * exp(s * gauss());
		}
		struct keyed k = {key};
		as_sort_u32(order, pb.n, by_key, &k);
		uint64_t peak = as_place_order(pl, order, pb.n, AS_FIT_LOWEST,
					       off);
		if (peak < best)
			best = peak;
		restarts++;
	}
	printf("%llu %llu %llu %.1f\n", (unsigned long long)best,
	       (unsigned long long)pb.lower_bound,
	       (unsigned long long)restarts, (as_now_ms() - t0) / 1000.0);
	as_placer_destroy(pl);
	free(order);
	free(key);
	free(off);
	as_problem_finish(&pb);
	as_trace_destroy(t);
	return 0;
}
