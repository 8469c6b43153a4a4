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
 *    2. the exact branch and bound of place/exact.c, first at the threshold,
 *       then bisecting between it and the best height, until budget_ms= or
 *       nodes=; with search=local (or more than 6000 rectangles) the
 *       skyline greedy instead, and the restarts.
 *  - More rectangles (strip_large): O(n log n) time sweeps, the skyline
 *    greedy when affordable, "big first" (the biggest rectangles by the
 *    method above, the rest swept around them), the window search (the
 *    exact search on a band around the peak with the rest held), a middle
 *    tier and a peak repair; with few overlapping pairs only half the time.
 *  - Whatever time a path leaves (unless search=none): the restarts
 *    (restart.c), the skyline greedy again and again with its ties broken
 *    by randomly scaled areas.
 *
 * Every step that yields a plan is recorded with as_plan_round (label,
 * peak). Everything is deterministic for a given seed= except where the
 * wall-clock budget cuts; nodes= fixes the effort instead. A cancel of the
 * run stops every search at its next look (cfg.budget): AS_ECANCELED.
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
 * The baselines' plans: greedy-size, greedy-breadth and bestfit (fastest
 * first; a single space at the lower bound ends the list) run as
 * `replay -s NAME` runs them (the same code, the trace's options), and per
 * address space the lowest of their peaks goes to inc[] (per trace buffer).
 * They are strip's incumbents, computed first: whatever the search finds
 * later only replaces them when lower, so strip is never behind them.
 * Those strip makes itself get half of budget_ms (at least
 * BASELINES_MIN_MS): one whose guessed cost does not fit is skipped, one
 * that runs past it is called off (fits(), as_run_reuse_until); plans the
 * runner keeps are taken whole.
 * Under a step limit (the default set's, as_runner_options.step_limit) a
 * baseline that stops at it is no incumbent: strip is then never behind
 * the ones that finished. Returns 0, NO_INCUMBENTS, or a negative code
 * (diag filled).
 */
#define NO_INCUMBENTS 1 /* incumbents(): the search starts from nothing */

static const char *const baselines[] = {"greedy-size", "greedy-breadth",
					"bestfit"};
/*
 * Their cost relative to greedy-size's (on a 1.3M-buffer compiler mtrace:
 * 4.6 s, 9.2 s, 17.3 s), and greedy-size's own per buffer (25 us a buffer
 * on place_gen.py random 1000000, 24 us on a 1.48M-buffer git mtrace).
 */
static const double cost[] = {1, 2, 4};
#define GREEDY_SIZE_US 25.0
/*
 * What the baselines may take whatever the budget: small traces (up to
 * about 8000 buffers by greedy-size's guess) keep their incumbents even at
 * budget_ms=0, and a run takes at most max(budget_ms, this) plus the first
 * plan of a search without incumbents.
 */
#define BASELINES_MIN_MS 200.0

/*
 * Whether baseline k may start at `now` with `left` ms to its deadline,
 * greedy-size having taken gs_ms (0: not yet run); a round says why not.
 */
static int fits(const struct as_trace *t, size_t k, double gs_ms,
		double left, struct as_plan *p, bool *go)
{
	double guess = gs_ms > 0 ? gs_ms * cost[k]
				 : (double)t->nbuffers * GREEDY_SIZE_US / 1e3 *
					   cost[k];
	*go = guess <= left;
	if (*go)
		return AS_OK;
	char label[48];
	snprintf(label, sizeof(label), "%s skipped: ~%.0f ms > %.0f ms",
		 baselines[k], guess, left > 0 ? left : 0);
	return as_plan_round(p, label, 0);
}

static int incumbents(const struct as_trace *t, struct as_run *run,
		      double deadline, struct as_plan *p, uint64_t *inc,
		      struct as_diag *diag)
{
	uint32_t ns = t->nspaces > 1 ? t->nspaces : 1;
	uint64_t *best = malloc(ns * sizeof(uint64_t));
	uint64_t *peak = malloc(ns * sizeof(uint64_t));
	uint64_t *bound = malloc(ns * sizeof(uint64_t));
	double gs_ms = 0;
	int err = AS_OK;
	if (!best || !peak || !bound ||
	    as_trace_lower_bound_spaces(t, bound) != AS_OK) {
		err = as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t s = 0; s < ns; s++)
		best[s] = UINT64_MAX;
	for (size_t k = 0; k < sizeof(baselines) / sizeof(*baselines); k++) {
		struct as_plan *bp = NULL;
		/* A plan the runner keeps (or another run makes) is no work
		 * of strip's: it is taken whole, and waiting is not counted. */
		bool go = as_run_kept(run, baselines[k]);
		double t0 = as_now_ms(), end = deadline + run->waited_ms;
		if (!go && (err = fits(t, k, gs_ms, end - t0, p, &go)))
			goto out;
		if (!go)
			break; /* the later ones cost more */
		err = as_run_reuse_until(run, baselines[k], end, &bp, diag);
		if (err == AS_ELIMIT) {
			char label[48];
			snprintf(label, sizeof(label), "%s cut at %.0f ms",
				 baselines[k], as_now_ms() - t0);
			/* A step limit (the default set's) is no cut. */
			err = as_now_ms() >= end
				      ? as_plan_round(p, label, 0)
				      : AS_OK;
			if (err)
				goto out;
			continue;
		}
		if (err)
			goto out;
		if (k == 0)
			gs_ms = bp->plan_ms > 0.01 ? bp->plan_ms : 0.01;
		as_plan_space_peaks(t, bp, peak);
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			uint32_t s = t->buffers[i].space < ns
					     ? t->buffers[i].space
					     : 0;
			if (peak[s] < best[s])
				inc[i] = bp->offset[i];
		}
		for (uint32_t s = 0; s < ns; s++)
			if (peak[s] < best[s])
				best[s] = peak[s];
		as_plan_destroy(bp);
		/* At the bound nothing does better: skip the slower ones. */
		bool all = true;
		for (uint32_t s = 0; s < ns && all; s++)
			all = best[s] <= bound[s];
		if (all)
			break;
	}
	/* No baseline places every buffer of a space (past 2^64): none. */
	for (uint32_t s = 0; s < ns && err == AS_OK; s++)
		if (best[s] == UINT64_MAX)
			err = NO_INCUMBENTS;
out:
	free(best);
	free(peak);
	free(bound);
	return err;
}

/*
 * The certificate of a space: the window bo found, or the whole space when
 * the exact search refuted more on it (cfg->proven), else the load alone.
 */
static int certify(const struct as_problem *pb,
		   const struct as_strip_bound_out *bo,
		   const struct as_strip_cfg *cfg, struct as_plan *p)
{
	struct as_certificate c = {0};
	uint64_t bound = bo->bound, nodes = bo->proof_nodes;
	uint32_t wa = bo->wa, wb = bo->wb;
	if (cfg->proven > bound) {
		bound = cfg->proven;
		nodes = cfg->proven_nodes;
		wa = 0;
		wb = pb->nsections;
	}
	if (as_strip_certificate(pb, wa, wb, bound, nodes, &c) != AS_OK)
		return AS_ENOMEM;
	c.space = pb->n ? cfg->trace->buffers[pb->r[0].buf].space : 0;
	return as_plan_certify(p, &c);
}

static int plan_space(const struct as_problem *pb, uint64_t *off, void *ctx,
		      struct as_plan *p, struct as_diag *diag)
{
	struct as_strip_cfg *cfg = ctx;
	double now = as_now_ms();
	double end = cfg->start_ms + (double)cfg->budget_ms;
	/*
	 * Baselines slower than half the budget still leave the search half
	 * of it: a run takes at most max(budget, baselines + budget / 2).
	 */
	if (end < cfg->search_from + (double)cfg->budget_ms / 2)
		end = cfg->search_from + (double)cfg->budget_ms / 2;
	/* The time left, shared among the spaces by their rectangles. */
	double deadline = now;
	if (end > now && cfg->left > 0)
		deadline = now + (end - now) * ((double)pb->n /
						(double)(cfg->left > pb->n
								 ? cfg->left
								 : pb->n));
	cfg->left = cfg->left > pb->n ? cfg->left - pb->n : 0;
	/*
	 * The certified bound's share (bound=), after the search: a search
	 * that reaches the load needs no bound, and the bound's windows
	 * bisect below the best plan.
	 */
	double bound_ms = (deadline - now) * (double)cfg->bound_pct / 100;
	uint64_t bound_nodes = cfg->nodes ? cfg->nodes / 4 + 1 : 0;
	struct as_strip_bound_out bo = {.bound = pb->lower_bound};
	int err = AS_OK;
	uint64_t *alt = NULL, *start = NULL;
	cfg->nspace++;
	cfg->start = NULL;
	cfg->start_peak = UINT64_MAX;
	cfg->proven = cfg->proven_nodes = 0;
	if (cfg->inc) {
		start = malloc(pb->n * sizeof(uint64_t));
		if (!start)
			goto nomem;
		for (uint32_t k = 0; k < pb->n; k++)
			start[k] = cfg->inc[pb->r[k].buf];
		cfg->start = start;
		cfg->start_peak = as_place_peak(pb, start);
		if ((err = as_strip_note(cfg, p, "baselines' best",
					 cfg->start_peak)))
			goto out;
		memcpy(off, start, pb->n * sizeof(uint64_t));
		/* At the bound, or no time left: the baselines' plan stands. */
		if (cfg->start_peak <= pb->lower_bound ||
		    as_budget_past(cfg->budget, deadline))
			goto bound;
	}
	/* No window holds the section of most load: its share goes back. */
	if (bound_ms > 0 && !as_strip_bound_windows(pb))
		bound_ms = 0;
	double search_end = deadline - bound_ms;
	/*
	 * Beyond the exact search's size the seed's method does worse than
	 * the large path and the restarts (measured on tiled real traces).
	 */
	bool many = pb->n > cfg->exact_max && cfg->search == SEARCH_AUTO;
	bool few_pairs = as_problem_pairs(pb) <= AS_STRIP_PAIRS_MAX;
	alt = calloc(pb->n, sizeof(uint64_t));
	if (!alt)
		goto nomem;
	if (!many && few_pairs) {
		err = as_strip_full(pb, alt, cfg, p, search_end);
	} else {
		/*
		 * Many rectangles or pairs: the large path; with few pairs
		 * it gets half the time and the restarts the rest.
		 */
		now = as_now_ms();
		err = as_strip_large(pb, alt, cfg, p,
				     few_pairs ? now + (search_end - now) / 2
					       : search_end);
	}
	/* Never behind the baselines: the search's plan only when lower. */
	if (err == AS_OK &&
	    (!start || as_place_peak(pb, alt) < cfg->start_peak))
		memcpy(off, alt, pb->n * sizeof(uint64_t));
	/*
	 * Whatever time the path left goes to the restarts, from the best
	 * plan so far.
	 */
	if (err == AS_OK && cfg->search != SEARCH_NONE &&
	    as_place_peak(pb, off) > pb->lower_bound &&
	    as_place_peak(pb, off) > cfg->proven && /* else optimal */
	    !as_budget_past(cfg->budget, search_end))
		err = as_strip_restarts(pb, off, cfg, p, search_end);
bound:
	/*
	 * The padded load whenever the plan is above the load (it takes no
	 * share), then the windows in what is left of the share.
	 */
	if (err == AS_OK && cfg->bound_pct &&
	    as_place_peak(pb, off) > pb->lower_bound &&
	    as_place_peak(pb, off) > cfg->proven) {
		err = as_strip_padded(pb, &bo);
		if (err == AS_OK && bound_ms > 0 &&
		    !as_budget_past(cfg->budget, deadline)) {
			err = as_strip_bound(pb, off, cfg, deadline,
					     bound_nodes, &bo);
			cfg->bound_spent += bo.nodes;
		}
	}
out:
	if (err == AS_OK)
		err = certify(pb, &bo, cfg, p);
	cfg->start = NULL;
	free(start);
	free(alt);
	if (err == AS_EUNSUPPORTED)
		return AS_STRATEGY_PAST_2_64;
	if (err == AS_ENOMEM)
		return as_diag_set(diag, 0, err, "out of memory");
	return err;
nomem:
	err = AS_ENOMEM;
	goto out;
}

static const struct as_option_desc options[] = {
	{"metric", "size-length",
	 "first order: size-length, size, length, overlap, area, sum, ratio, "
	 "length-size, size-overlap, overlap-size"},
	{"rounds", "8", "seed tuning rounds (0-1000)", ""},
	{"budget_ms", "3000",
	 "time for the whole run, per trace: the baselines (at most half, "
	 "skipped or cut short beyond), the search, the certified bound "
	 "(0-3600000)",
	 ""},
	{"seed", "1", "seed of the search's tie-breaks"},
	{"search", "auto",
	 "auto, exact, local (restarts of the skyline greedy) or none",
	 "local none"},
	{"exact_max", "3000",
	 "largest rectangle count for the exact search under auto (0-6000)",
	 ""},
	{"big", "256",
	 "large traces: buffers of at least 1/big of the bound go first "
	 "(2-65536)"},
	{"baselines", "on",
	 "on: start from the best of greedy-size, bestfit and greedy-breadth "
	 "(never behind those that fit in half the budget); off: without "
	 "them"},
	{"nodes", "0",
	 "search effort cap, machine independent (0: the budget only)"},
	{"bound", "20",
	 "percent of the time for the certified lower bound (0-90; 0: the "
	 "load alone)",
	 ""},
	{NULL, NULL, NULL},
};

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_run *run, struct as_plan *p, struct as_diag *diag)
{
	/*
	 * strip is timed by budget_ms, not held to the run's step limit: its
	 * searches get a budget with the run's cancel flag alone (no steps
	 * counted, no processors lent to its placers). Only the restarts
	 * borrow an idle processor, for a second thread of them.
	 */
	struct as_budget stop = {.cancel = run->budget.cancel,
				  .hook = run->budget.hook};
	struct as_strip_cfg cfg = {.budget = &stop, .spare = run->budget.spare,
				   .trace = t};
	int err, with_baselines;
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
	    (err = as_opts_u64(o, "big", 256, 2, 65536, &cfg.big, diag)) ||
	    (err = as_opts_u64(o, "bound", 20, 0, 90, &cfg.bound_pct,
			       diag)) ||
	    (err = as_opts_choice(o, "baselines",
				  (const char *const[]){"off", "on", NULL}, 1,
				  &with_baselines, diag)))
		return err;
	uint64_t *inc = NULL;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		cfg.left += b->alias_of == AS_NONE && b->size > 0 &&
			    b->start < b->end;
	}
	/*
	 * The incumbents: a trace too large for the baselines' time and
	 * memory (see AS_PLACE_BASELINE_MAX) goes without them.
	 */
	if (with_baselines && as_place_baseline_default(t)) {
		inc = malloc(((size_t)t->nbuffers + 1) * sizeof(uint64_t));
		if (!inc)
			return as_diag_set(diag, 0, AS_ENOMEM,
					   "out of memory");
		/*
		 * The baselines get half the budget (at least
		 * BASELINES_MIN_MS), the search the rest.
		 */
		double half = (double)cfg.budget_ms / 2;
		err = incumbents(t, run,
				 cfg.start_ms + (half > BASELINES_MIN_MS
							 ? half
							 : BASELINES_MIN_MS),
				 p, inc, diag);
		if (err != AS_OK && err != NO_INCUMBENTS) {
			free(inc);
			return err;
		}
		cfg.inc = err == AS_OK ? inc : NULL;
	}
	/* Waiting for a baseline another thread makes is not strip's time. */
	cfg.start_ms += run->waited_ms;
	cfg.search_from = as_now_ms();
	err = as_plan_spaces(t, p, plan_space, &cfg, diag);
	if (err == AS_OK && cfg.bound_pct)
		err = as_plan_stat_int(p, "bound_nodes", cfg.bound_spent);
	free(inc);
	/* Canceled, the searches stopped early and their plan is no answer. */
	if (as_budget_canceled(&stop))
		return AS_ECANCELED;
	return err;
}

const struct as_strategy_impl as_strategy_strip = {
	.info = {
		.name = "strip",
		.summary = "lifetime strip packing with peak suppression and "
			   "an exact search or randomized restarts under a time "
			   "budget",
		.online = false,
		.options = options,
	},
	.plan = plan,
	.reuses = true,
};
