/*
 * Strategy strip, the large-trace path (strip.h) for traces with many
 * overlapping pairs: greedy-size's start, the time sweeps, big first and
 * the middle tier, each step run when its estimated cost fits the time
 * left; the repair of the best plan (repair.c) gets the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/strip/strip.h"
#include "core/internal.h"
#include "strategies/strategy.h"

/*
 * Greedy-size's start at the cost of one sweep: the rectangles of at least
 * 1/1024 of the bound (the cut doubled while more than 1024 of them, so
 * their finds stay few; where doubling would leave none, the 1024 first
 * in greedy-size's order) go in greedy-size's order to their lowest fit,
 * and the sweep fits the rest around them. Where the largest ones set the
 * peak (malloc recordings) the plan is near greedy-size's at a fraction of
 * its cost. Uses fixed[] (left zeroed) and ids as scratch; *sweep_ms gets
 * the sweep's time. Returns the peak (as as_place_sweep; 0 with *err =
 * AS_OK: no big ones, or all of them).
 */
#define GREEDY_BIG_DIV 1024
#define GREEDY_BIG_MAX 1024

/* The rectangles of at least `cut` bytes into ids, at most cap of them. */
static uint32_t big_ids(const struct as_problem *pb, uint64_t cut,
			uint32_t *ids, uint32_t cap)
{
	uint32_t m = 0;
	for (uint32_t i = 0; i < pb->n && m < cap; i++)
		if (pb->r[i].size >= cut)
			ids[m++] = i;
	return m;
}

static uint64_t greedy_big(const struct as_problem *pb, struct as_budget *b,
			   const struct as_budget *until, uint64_t *tmp,
			   uint8_t *fixed, uint32_t *ids, double *sweep_ms,
			   int *err)
{
	uint32_t n = pb->n;
	uint64_t cut = pb->lower_bound / GREEDY_BIG_DIV + 1;
	uint32_t m = big_ids(pb, cut, ids, GREEDY_BIG_MAX + 1);
	while (m > GREEDY_BIG_MAX && cut <= UINT64_MAX / 2) {
		uint32_t twice = big_ids(pb, cut * 2, ids, GREEDY_BIG_MAX + 1);
		if (twice == 0)
			break;
		cut *= 2;
		m = twice;
	}
	*err = AS_OK;
	if (m > GREEDY_BIG_MAX)
		m = big_ids(pb, cut, ids, n);
	if (m == 0 || m >= n)
		return 0;
	*err = AS_ENOMEM;
	struct as_placer *pl = as_placer_create(pb);
	if (!pl || as_sort_greedy_size(pb, ids, m)) {
		as_placer_destroy(pl);
		return 0;
	}
	if (m > GREEDY_BIG_MAX)
		m = GREEDY_BIG_MAX;
	as_placer_budget(pl, b);
	uint64_t peak = 0;
	uint32_t k = 0;
	for (; k < m; k++) {
		uint32_t i = ids[k];
		if (!as_placer_find(pl, i, AS_FIT_LOWEST, &tmp[i], NULL))
			break;
		as_placer_put(pl, i, tmp[i]);
		fixed[i] = 1;
	}
	if (k < m) {
		*err = as_strip_placer_error(pl);
	} else {
		double t0 = as_now_ms();
		peak = as_place_sweep(pb, AS_FIT_LOWEST, fixed, pl, until, tmp,
				      err);
		*sweep_ms = as_now_ms() - t0;
	}
	as_placer_destroy(pl);
	memset(fixed, 0, n);
	return peak;
}

/*
 * Whether a step estimated to take `cost` ms ends before the deadline (and
 * the run is not canceled).
 */
static bool affordable(const struct as_budget *b, double deadline,
		       double cost)
{
	return !as_budget_canceled(b) && as_now_ms() + cost <= deadline;
}

/*
 * Take a sweep's plan tmp[] of `peak` (err as the sweep left it): record
 * it as `what` and keep it in off[] when below *best. A sweep the deadline
 * cut (AS_ELIMIT) is recorded as "<what> cut" and sets *cut. Returns 0 or
 * a negative code (AS_EUNSUPPORTED: an offset past 2^64).
 */
static int take_sweep(const struct as_strip_cfg *cfg, struct as_plan *p,
		      const char *what, uint64_t peak, int err, uint32_t n,
		      const uint64_t *tmp, uint64_t *off, uint64_t *best,
		      bool *cut)
{
	*cut = err == AS_ELIMIT;
	if (*cut) {
		char label[48];
		snprintf(label, sizeof(label), "%s cut", what);
		return as_strip_note(cfg, p, label, 0);
	}
	if (err)
		return err;
	if (peak == UINT64_MAX)
		return AS_EUNSUPPORTED;
	if ((err = as_strip_note(cfg, p, what, peak)))
		return err;
	if (peak < *best) {
		*best = peak;
		memcpy(off, tmp, n * sizeof(uint64_t));
	}
	return AS_OK;
}

/*
 * Traces with too many overlapping pairs for the seed's method (hundreds of
 * thousands to millions of buffers): without incumbents greedy-size's start
 * (greedy_big), else the O(n log n) time sweep, first fit and best fit;
 * then "big first": the big rectangles (where the bytes are) get the full
 * method on their own, and the sweep fits the rest around them, then a
 * middle tier. The best of these is kept, and the repair (repair.c: the
 * window step, then the peak repair) works on it.
 */
int as_strip_large(const struct as_problem *pb, uint64_t *off,
		       struct as_strip_cfg *cfg, struct as_plan *p, double deadline)
{
	uint32_t n = pb->n;
	uint64_t *tmp = calloc(n, sizeof(uint64_t));
	uint8_t *fixed = calloc(n, 1);
	uint32_t *map = calloc(n, sizeof(uint32_t));
	struct as_problem sub = *pb;
	struct as_placer *obst = NULL;
	uint64_t best = UINT64_MAX, peak;
	bool windowed = false, cut_short;
	int err = AS_ENOMEM;
	sub.r = calloc(n, sizeof(*sub.r));
	if (!tmp || !fixed || !map || !sub.r)
		goto out;
	/*
	 * The budget: a step starts only when its estimated cost fits in the
	 * time left. The first sweep (O(n log n), always run: without the
	 * baselines it is the first plan) gives the unit; a step visiting
	 * overlapping pairs costs about unit x pairs / (n log2 n) (an
	 * overestimate for the skyline greedy and the middle tier).
	 */
	double unit = 0, per_pair = 0;
	/*
	 * The first plan (always run, so the one step that may pass the
	 * deadline): without incumbents greedy-size's start, else (or where
	 * it has no big ones) the first-fit sweep, then the best-fit sweep
	 * when a unit fits. After greedy-size's start the plain sweeps are
	 * skipped: the window search makes more of their time.
	 */
	static const char *const sweeps[] = {"greedy-size big, sweep",
					     "sweep first fit",
					     "sweep best fit"};
	for (int f = 0; f < 3; f++) {
		double t0 = as_now_ms(), sweep_ms = 0;
		bool first = best == UINT64_MAX;
		if (!first && (f == 1 || !affordable(cfg->budget, deadline,
						     unit)))
			break;
		struct as_budget until = *cfg->budget;
		until.deadline = first ? 0 : deadline;
		if (f == 0 && cfg->start)
			continue; /* greedy-size itself is an incumbent */
		if (f == 0) {
			peak = greedy_big(pb, cfg->budget, &until, tmp, fixed,
					  map, &sweep_ms, &err);
			if (err == AS_OK && peak == 0)
				continue; /* no big ones */
		} else {
			peak = as_place_sweep(pb, f == 2 ? AS_FIT_BEST
							 : AS_FIT_LOWEST,
					      NULL, NULL, &until, tmp, &err);
		}
		if (first && !err) {
			uint32_t lg = 1;
			while (lg < 63 && (2ULL << lg) <= n)
				lg++;
			/* A sweep's time (greedy-size's finds left out). */
			unit = f == 0 ? sweep_ms : as_now_ms() - t0;
			per_pair = unit / ((double)n * lg);
		}
		if ((err = take_sweep(cfg, p, sweeps[f], peak, err, n, tmp, off,
				      &best, &cut_short)))
			goto out;
		if (cut_short && best != UINT64_MAX)
			break; /* a cut first plan gives way to the sweep */
	}
	/* The baselines' best, when it is better, is where the search starts. */
	if (cfg->start && cfg->start_peak < best) {
		best = cfg->start_peak;
		memcpy(off, cfg->start, n * sizeof(uint64_t));
	}
	/*
	 * The skyline greedy over everything, when its cost (at most a step
	 * per overlapping pair) fits.
	 */
	uint64_t pairs = as_problem_pairs(pb);
	if (affordable(cfg->budget, deadline, per_pair * (double)pairs)) {
		peak = as_strip_skyline_try(pb, cfg->budget, deadline, tmp,
					    &err);
		if (err == AS_ELIMIT) {
			err = AS_OK; /* out of time: the plan so far stands */
			goto out;
		}
		if (err)
			goto out;
		if ((err = as_strip_note(cfg, p, "skyline greedy", peak)))
			goto out;
		if (peak < best) {
			best = peak;
			memcpy(off, tmp, n * sizeof(uint64_t));
		}
	}
	/* Big: at least 1/big of the bound, doubling the cut while too many. */
	uint64_t cut = UINT64_MAX;
	sub.n = 0;
	if (!affordable(cfg->budget, deadline, 2 * unit))
		goto done; /* not even the cut's passes */
	for (cut = pb->lower_bound / cfg->big + 1;; cut *= 2) {
		sub.n = 0;
		if (cut == 0)
			break;
		for (uint32_t i = 0; i < n; i++)
			if (pb->r[i].size >= cut) {
				map[sub.n] = i;
				sub.r[sub.n++] = pb->r[i];
			}
		if (as_problem_pairs(&sub) <= AS_STRIP_PAIRS_MAX &&
		    sub.n <= cfg->exact_max)
			break;
	}
	if ((err = as_plan_stat_int(p, "big_rects", sub.n)))
		goto out;
	/* Big first: the sub-problem's search, then a sweep around it. */
	if (sub.n == 0 || sub.n == n ||
	    !affordable(cfg->budget, deadline, 2 * unit))
		goto done;
	{
		/* On the big ones' own sections (see as_problem_compact). */
		uint64_t *so = calloc(sub.n, sizeof(uint64_t));
		uint64_t *times = calloc((size_t)sub.n * 2, sizeof(uint64_t));
		uint32_t *mark = calloc((size_t)sub.nsections + 2,
					sizeof(uint32_t));
		uint64_t *load = NULL;
		if (so && times && mark) {
			as_problem_compact(&sub, mark, times);
			load = calloc((size_t)sub.nsections + 1,
				      sizeof(uint64_t));
		}
		free(mark);
		if (!load) {
			free(so);
			free(times);
			goto out;
		}
		as_problem_load(&sub, load);
		sub.lower_bound = 0;
		for (uint32_t t = 0; t < sub.nsections; t++)
			if (load[t] > sub.lower_bound)
				sub.lower_bound = load[t];
		free(load);
		/* No tuning rounds there: the exact search's dive does better. */
		struct as_strip_cfg c2 = *cfg;
		c2.rounds = 0;
		c2.start = NULL;
		double now = as_now_ms();
		err = as_strip_full(&sub, so, &c2, p,
				    now + (deadline - now - 2 * unit) / 2);
		for (uint32_t k = 0; err == AS_OK && k < sub.n; k++) {
			tmp[map[k]] = so[k];
			fixed[map[k]] = 1;
		}
		free(so);
		free(times);
		sub.nsections = pb->nsections;
		sub.times = pb->times;
		if (err)
			goto out;
	}
	obst = as_placer_create(pb);
	if (!obst)
		goto out;
	as_placer_budget(obst, cfg->budget);
	for (uint32_t i = 0; i < n; i++)
		if (fixed[i])
			as_placer_put(obst, i, tmp[i]);
	struct as_budget until = *cfg->budget;
	until.deadline = deadline;
	peak = as_place_sweep(pb, AS_FIT_LOWEST, fixed, obst, &until, tmp,
			      &err);
	if ((err = take_sweep(cfg, p, "big first, sweep", peak, err, n, tmp,
			      off, &best, &cut_short)))
		goto out;
	if (cut_short)
		goto done;
	/* The middle tier below gets what the window search leaves. */
	if ((err = as_strip_window_step(pb, off, cfg, p, deadline, 0.6, &best)))
		goto out;
	windowed = true;
	/*
	 * A middle tier, when the pairs allow one pass of the general placer:
	 * buffers down to cut/16 (all of them when the whole trace allows
	 * one pass) go largest first onto the big ones (lowest fit), the sweep
	 * fits the rest around both.
	 */
	uint64_t cut2 = pairs <= AS_STRIP_PAIRS_TIER ? 1 : cut / 16 + 1;
	sub.n = 0;
	for (uint32_t i = 0; i < n; i++)
		if (pb->r[i].size >= cut2)
			sub.r[sub.n++] = pb->r[i];
	uint64_t sub_pairs = as_problem_pairs(&sub);
	if (sub_pairs <= AS_STRIP_PAIRS_TIER &&
	    affordable(cfg->budget, deadline,
		       per_pair * (double)sub_pairs + unit)) {
		uint32_t m = 0;
		for (uint32_t i = 0; i < n; i++)
			if (!fixed[i] && pb->r[i].size >= cut2)
				map[m++] = i;
		if ((err = as_strip_order(pb, 0, map, m)))
			goto out;
		for (uint32_t k = 0; k < m; k++) {
			uint32_t i = map[k];
			if (!as_placer_find(obst, i, AS_FIT_LOWEST, &tmp[i],
					    NULL)) {
				err = as_strip_placer_error(obst);
				goto out;
			}
			as_placer_put(obst, i, tmp[i]);
			fixed[i] = 1;
		}
		peak = as_place_sweep(pb, AS_FIT_LOWEST, fixed, obst, &until,
				      tmp, &err);
		if ((err = take_sweep(cfg, p, "big, middle, sweep", peak, err,
				      n, tmp, off, &best, &cut_short)))
			goto out;
		if (cut_short)
			goto done;
	}
done:
	/* Steps that did not fit leave their time to the window search. */
	if (!windowed && (err = as_strip_window_step(pb, off, cfg, p, deadline, 0.6,
					    &best)))
		goto out;
	if (n <= AS_STRIP_REPAIR_MAX &&
	    !as_budget_past(cfg->budget, deadline)) {
		uint32_t moves;
		/* The big ones stay; `fixed` marks them, or nothing. */
		if (sub.n == 0 || sub.n == n)
			memset(fixed, 0, n);
		else
			for (uint32_t i = 0; i < n; i++)
				fixed[i] = pb->r[i].size >= cut;
		peak = as_strip_repair_peak(pb, off, fixed, cfg->seed, deadline,
				   cfg->budget, &moves, &err);
		if (err)
			goto out;
		if (moves && (err = as_strip_note(cfg, p, "peak repair", peak)))
			goto out;
		if ((err = as_plan_stat_int(p, "repair_moves", moves)))
			goto out;
	}
	err = AS_OK;
out:
	as_placer_destroy(obst);
	free(tmp);
	free(fixed);
	free(map);
	free(sub.r);
	return err;
}
