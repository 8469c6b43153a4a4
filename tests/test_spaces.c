/*
 * The one-pass per-space functions (as_trace_lower_bound_spaces,
 * as_plan_peaks, as_spaces + as_problem_init_space) give what their
 * single-space versions give, space by space, on random multi-space traces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/allocscope.h"
#include "core/internal.h"
#include "strategies/place/place.h"
#include "helpers.h"
#include "tap.h"

static const int pool_counts[] = {1, 2, 7, 61, 200};

static void lower_bound_spaces_equal_each_space_own_bound(void)
{
	for (size_t c = 0; c < sizeof(pool_counts) / sizeof(*pool_counts);
	     c++) {
		struct as_trace *t =
			test_random_pools_trace(11 + c, pool_counts[c], 3000);
		CHECK(t != NULL);
		if (!t)
			continue;
		CHECK(t->nspaces * 2 >= pool_counts[c]);
		uint64_t *lb = malloc(((size_t)t->nspaces + 1) * sizeof(*lb));
		CHECK(lb && as_trace_lower_bound_spaces(t, lb) == AS_OK);
		uint64_t sum = 0;
		for (uint16_t s = 0; lb && s < t->nspaces; s++) {
			CHECK_EQ_U64(lb[s], as_trace_lower_bound_space(t, s));
			sum += lb[s];
		}
		CHECK_EQ_U64(as_trace_lower_bound(t), sum);
		free(lb);
		as_trace_destroy(t);
	}
}

static void plan_peaks_equal_each_space_own_peak(void)
{
	static const char *specs[] = {"greedy-size", "bestfit",
				      "greedy-breadth"};
	uint64_t seed = 5;
	for (size_t c = 0; c < sizeof(pool_counts) / sizeof(*pool_counts);
	     c++) {
		struct as_trace *t =
			test_random_pools_trace(31 + c, pool_counts[c], 3000);
		CHECK(t != NULL);
		for (size_t k = 0; t && k < sizeof(specs) / sizeof(*specs);
		     k++) {
			struct as_plan *p = NULL;
			struct as_diag d;
			CHECK(as_strategy_run(specs[k], t, NULL, &p, &d) ==
			      AS_OK);
			if (!p)
				continue;
			/* Some failed allocations: they count nowhere. */
			for (uint32_t i = 0; i < t->nbuffers; i++)
				if (as_splitmix64(&seed) % 9 == 0)
					p->offset[i] = AS_NO_OFFSET;
			uint64_t *pk = malloc(((size_t)p->nspaces + 1) *
					      sizeof(*pk));
			CHECK(pk != NULL);
			uint64_t sum = 0;
			if (pk)
				as_plan_peaks(p, t, pk);
			for (uint16_t s = 0; pk && s < p->nspaces; s++) {
				CHECK_EQ_U64(pk[s], as_plan_peak(p, t, s));
				sum += pk[s];
			}
			if (p->nspaces > 1)
				CHECK_EQ_U64(as_plan_peak(p, t, -1), sum);
			free(pk);
			as_plan_destroy(p);
		}
		as_trace_destroy(t);
	}
}

static bool same_problem(const struct as_problem *a,
			 const struct as_problem *b)
{
	if (a->n != b->n || a->nsections != b->nsections ||
	    a->lower_bound != b->lower_bound)
		return false;
	if (a->n == 0)
		return true;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->r[i].buf != b->r[i].buf || a->r[i].size != b->r[i].size ||
		    a->r[i].t0 != b->r[i].t0 || a->r[i].t1 != b->r[i].t1 ||
		    a->r[i].align_log2 != b->r[i].align_log2)
			return false;
	return memcmp(a->times, b->times,
		      ((size_t)a->nsections + 1) * sizeof(*a->times)) == 0;
}

static void problems_from_buckets_equal_problems_built_per_space(void)
{
	for (size_t c = 0; c < sizeof(pool_counts) / sizeof(*pool_counts);
	     c++) {
		struct as_trace *t =
			test_random_pools_trace(71 + c, pool_counts[c], 3000);
		CHECK(t != NULL);
		if (!t)
			continue;
		struct as_spaces sp;
		CHECK(as_spaces_init(&sp, t) == AS_OK);
		uint32_t nonempty = 0;
		for (uint16_t s = 0; s < t->nspaces || s == 0; s++) {
			struct as_problem a, b;
			CHECK(as_problem_init(&a, t, s) == AS_OK);
			CHECK(as_problem_init_space(&b, t, &sp, s) == AS_OK);
			CHECK(same_problem(&a, &b));
			nonempty += a.n > 0;
			as_problem_finish(&a);
			as_problem_finish(&b);
		}
		CHECK(nonempty > 0);
		as_spaces_finish(&sp);
		as_trace_destroy(t);
	}
}

int main(void)
{
	TEST_RUN(lower_bound_spaces_equal_each_space_own_bound);
	TEST_RUN(plan_peaks_equal_each_space_own_peak);
	TEST_RUN(problems_from_buckets_equal_problems_built_per_space);
	return tap_done();
}
