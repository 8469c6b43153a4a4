/*
 * `strip`: lifetime strip packing with peak suppression.
 *
 * Each buffer is a rectangle (lifetime x size) dropped into a container
 * whose floor is offset 0; the lower bound is the threshold a perfect plan
 * reaches. Per address space, by size of the problem:
 *
 *  - Up to exact_max= rectangles with few overlapping pairs (strip_full):
 *    1. the seed's method: order by a metric (metric=), place each at the
 *       lowest offset that fits among the placed rectangles sharing its
 *       time; while above the threshold classify (high, medium, low, no
 *       risk), split high and medium into groups linked by time overlap,
 *       tune group by group on top of what earlier groups left (metrics in
 *       turn until the group stays under the threshold, keeping its best),
 *       place tuned high, tuned medium, low and no-risk again; stop at the
 *       threshold, a repeated order (fixed point) or rounds= rounds.
 *    2. the exact branch and bound of place/exact.c, first at the threshold, then
 *       bisecting between it and the best height, until budget_ms=/nodes=.
 *  - More rectangles, still few pairs: the same with the skyline greedy
 *    and a local search over orders instead of the exact search, and the
 *    large-trace path below with half the time; the better plan wins.
 *  - Many overlapping pairs (strip_large): O(n log n) time sweeps, the
 *    skyline greedy when affordable, "big first" (the biggest rectangles
 *    by the method above, the rest swept around them), the window search
 *    (the exact search on a band around the peak with the rest held), a
 *    middle tier and a peak repair.
 *
 * Every step that yields a plan is recorded with as_plan_round (label,
 * peak). Everything is deterministic for a given seed= except where the
 * wall-clock budget cuts; nodes= fixes the effort instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/strip/strip.h"
#include "core/internal.h"
#include "strategies/strategy.h"

static const char *const search_names[] = {"auto", "exact", "local", "none",
					   NULL};

/*
 * The baselines' plans of one space (greedy-size, bestfit's two orders,
 * greedy-breadth) through the shared placer; the best goes to off and its
 * peak to *peak. Returns 0, AS_ENOMEM or AS_EUNSUPPORTED (overflow).
 */
static int incumbents(const struct as_problem *pb, uint64_t *off,
		      uint64_t *peak)
{
	struct as_placer *pl = as_placer_create(pb);
	uint32_t *order = calloc(pb->n, sizeof(uint32_t));
	uint64_t *tmp = calloc(pb->n, sizeof(uint64_t));
	int err = AS_ENOMEM;
	*peak = UINT64_MAX;
	if (!pl || !order || !tmp)
		goto out;
	for (int k = 0; k < 4; k++) {
		err = k == 0   ? as_order_greedy_size(pb, order)
		      : k == 3 ? as_order_breadth(pb, order)
			       : as_order_bestfit(pb, k == 2, order);
		if (err)
			goto out;
		uint64_t pk = as_place_order(pl, order, pb->n,
					     k ? AS_FIT_BEST : AS_FIT_LOWEST,
					     tmp);
		if (pk == UINT64_MAX) {
			err = as_placer_nomem(pl) ? AS_ENOMEM : AS_EUNSUPPORTED;
			goto out;
		}
		if (pk < *peak) {
			*peak = pk;
			memcpy(off, tmp, pb->n * sizeof(uint64_t));
		}
	}
out:
	as_placer_destroy(pl);
	free(order);
	free(tmp);
	return err;
}

static int plan_space(const struct as_problem *pb, uint64_t *off, void *ctx,
		      struct as_plan *p, struct as_diag *diag)
{
	struct as_strip_cfg *cfg = ctx;
	double deadline = cfg->start_ms + (double)cfg->budget_ms;
	int err;
	cfg->nspace++;
	/*
	 * Beyond the exact search's size the seed's method and the local
	 * search do worse than big-first (measured on tiled real traces).
	 */
	bool many = pb->n > cfg->exact_max && cfg->search == SEARCH_AUTO;
	bool few_pairs = as_problem_pairs(pb) <= AS_STRIP_PAIRS_MAX;
	if (!many && few_pairs) {
		err = as_strip_full(pb, off, cfg, p, deadline);
	} else if (!few_pairs) {
		err = as_strip_large(pb, off, cfg, p, deadline);
	} else {
		/* Both, the large path with half the time; keep the better. */
		uint64_t *alt = calloc(pb->n, sizeof(uint64_t));
		if (!alt)
			return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
		double now = as_now_ms();
		err = as_strip_large(pb, off, cfg, p, now + (deadline - now) / 2);
		if (err == AS_OK)
			err = as_strip_full(pb, alt, cfg, p, deadline);
		if (err == AS_OK &&
		    as_place_peak(pb, alt) < as_place_peak(pb, off))
			memcpy(off, alt, pb->n * sizeof(uint64_t));
		free(alt);
	}
	/*
	 * Never behind the baselines: their best plan is the incumbent (a
	 * trace too large for the placer's memory skips them).
	 */
	if (err == AS_OK && pb->n <= AS_STRIP_INCUMBENT_MAX) {
		uint64_t *inc = calloc(pb->n, sizeof(uint64_t)), ipeak;
		err = inc ? incumbents(pb, inc, &ipeak) : AS_ENOMEM;
		if (err == AS_OK)
			err = as_strip_note(cfg, p, "baselines' best", ipeak);
		if (err == AS_OK && ipeak < as_place_peak(pb, off))
			memcpy(off, inc, pb->n * sizeof(uint64_t));
		free(inc);
	}
	if (err == AS_EUNSUPPORTED)
		return AS_STRATEGY_PAST_2_64;
	if (err == AS_ENOMEM)
		return as_diag_set(diag, 0, err, "out of memory");
	return err;
}

static const struct as_option_desc options[] = {
	{"metric", "size-length",
	 "first order: size-length, size, length, overlap, area, sum, ratio, "
	 "length-size, size-overlap, overlap-size"},
	{"rounds", "8", "seed tuning rounds (0-1000)"},
	{"budget_ms", "3000",
	 "time for the improving search, per trace (0-3600000)"},
	{"seed", "1", "seed of the search's tie-breaks"},
	{"search", "auto", "auto, exact, local or none"},
	{"exact_max", "3000",
	 "largest rectangle count for the exact search under auto (0-6000)"},
	{"big", "256",
	 "large traces: buffers of at least 1/big of the bound go first "
	 "(2-65536)"},
	{"nodes", "0",
	 "search effort cap, machine independent (0: the budget only)"},
	{NULL, NULL, NULL},
};

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	struct as_strip_cfg cfg = {0};
	int err;
	cfg.start_ms = as_now_ms();
	cfg.multi = t->nspaces > 1;
	if ((err = as_opts_choice(o, "metric", as_strip_metrics, 0,
				  &cfg.metric, diag)) ||
	    (err = as_opts_u64(o, "rounds", 8, 0, 1000, &cfg.rounds, diag)) ||
	    (err = as_opts_u64(o, "budget_ms", 3000, 0, 3600000,
			       &cfg.budget_ms, diag)) ||
	    (err = as_opts_u64(o, "seed", 1, 0, UINT64_MAX, &cfg.seed,
			       diag)) ||
	    (err = as_opts_choice(o, "search", search_names, SEARCH_AUTO,
				  &cfg.search, diag)) ||
	    (err = as_opts_u64(o, "exact_max", 3000, 0, AS_STRIP_EXACT_LIMIT,
			       &cfg.exact_max, diag)) ||
	    (err = as_opts_u64(o, "nodes", 0, 0, UINT64_MAX, &cfg.nodes,
			       diag)) ||
	    (err = as_opts_u64(o, "big", 256, 2, 65536, &cfg.big, diag)))
		return err;
	return as_plan_spaces(t, p, plan_space, &cfg, diag);
}

const struct as_strategy_impl as_strategy_strip = {
	.info = {
		.name = "strip",
		.summary = "lifetime strip packing with peak suppression and "
			   "an exact/local search under a time budget",
		.online = false,
		.options = options,
	},
	.plan = plan,
};
