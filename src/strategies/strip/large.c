/*
 * Strategy strip, the large-trace path (strip.h): greedy-size's start,
 * time sweeps, big first, the window search with its refills, top swaps and
 * the peak repair, for traces with many overlapping pairs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/strip/strip.h"
#include "core/internal.h"
#include "strategies/strategy.h"

/*
 * Peak repair, a large-neighbourhood search: take a rectangle at the peak,
 * lift out every movable rectangle sharing time with it (the window), and
 * put them back one by one at the lowest offset that fits, in a few orders
 * (largest first, earliest first, seeded shuffles). Keep the first order
 * whose highest top is below the peak, else restore the window and widen
 * it once to everything sharing time with the window. Stops when a peak
 * rectangle cannot be lowered, the time is up or the run is canceled.
 * Returns the new peak.
 */
struct repair {
	const struct as_problem *pb;
	struct as_placer *pl;
	const struct as_budget *budget; /* also the placer's */
	uint64_t *off, *save;
	const uint8_t *fixed;
	uint32_t *win;
	uint32_t nwin, placed;
	uint64_t rng;
};

/*
 * Re-place the window in its current order; highest top, UINT64_MAX when a
 * find failed (overflow, or a cancel: as_strip_placer_error) or
 * UINT64_MAX - 1 when the deadline cut it (restore() then puts the window
 * back).
 */
static uint64_t refill(struct repair *rp, double deadline)
{
	uint64_t high = 0;
	for (uint32_t k = 0; k < rp->nwin; k++)
		as_placer_pop(rp->pl, rp->win[k]);
	for (uint32_t k = 0; k < rp->nwin; k++) {
		uint32_t i = rp->win[k];
		uint64_t y;
		/* A find costs what shares time with i: look at the clock. */
		if (k % 32 == 31 && as_budget_past(rp->budget, deadline)) {
			rp->placed = k;
			return UINT64_MAX - 1;
		}
		if (!as_placer_find(rp->pl, i, AS_FIT_LOWEST, &y, NULL)) {
			rp->placed = k;
			return UINT64_MAX;
		}
		rp->off[i] = y;
		as_placer_put(rp->pl, i, y);
		if (y + rp->pb->r[i].size > high)
			high = y + rp->pb->r[i].size;
	}
	rp->placed = rp->nwin;
	return high;
}

/* Put the window back where it was (after a refill that placed `placed`). */
static void restore(struct repair *rp)
{
	for (uint32_t k = 0; k < rp->placed; k++)
		as_placer_pop(rp->pl, rp->win[k]);
	for (uint32_t k = 0; k < rp->nwin; k++) {
		uint32_t i = rp->win[k];
		rp->off[i] = rp->save[k];
		as_placer_put(rp->pl, i, rp->off[i]);
	}
}

static bool by_start(uint32_t a, uint32_t b, const void *cv)
{
	const struct as_problem *pb = cv;
	return pb->r[a].t0 < pb->r[b].t0 ||
	       (pb->r[a].t0 == pb->r[b].t0 && a < b);
}

static uint64_t repair_peak(const struct as_problem *pb, uint64_t *off,
			    const uint8_t *fixed, uint64_t seed,
			    double deadline, struct as_budget *budget,
			    uint32_t *moves, int *err)
{
	uint32_t n = pb->n;
	struct repair rp = {.pb = pb, .off = off, .fixed = fixed,
			    .budget = budget,
			    .rng = seed * 0x2545f4914f6cdd1dULL + 7};
	uint64_t peak = as_place_peak(pb, off);
	rp.pl = as_placer_create(pb);
	if (rp.pl) {
		as_placer_undo(rp.pl); /* trials are taken back */
		as_placer_budget(rp.pl, budget);
	}
	rp.win = calloc(n, sizeof(uint32_t));
	rp.save = calloc(n, sizeof(uint64_t));
	*err = AS_ENOMEM;
	*moves = 0;
	if (!rp.pl || !rp.win || !rp.save)
		goto out;
	*err = AS_OK;
	for (uint32_t i = 0; i < n; i++) {
		/*
		 * Up to AS_STRIP_REPAIR_MAX puts (seconds under a sanitizer):
		 * look at the cancel flag and the clock.
		 */
		if (i % 256 == 255 && as_budget_past(budget, deadline)) {
			if (as_budget_canceled(budget))
				*err = AS_ECANCELED;
			goto out;
		}
		as_placer_put(rp.pl, i, off[i]);
	}
	while (peak > pb->lower_bound && !as_budget_past(budget, deadline)) {
		uint32_t top = 0;
		while (off[top] + pb->r[top].size != peak)
			top++;
		uint32_t t0 = pb->r[top].t0, t1 = pb->r[top].t1;
		bool done = false;
		for (int wide = 0; wide < 2 && !done; wide++) {
			if (wide) {
				/*
				 * Everything sharing time with the window,
				 * the fixed ones too.
				 */
				for (uint32_t k = 0; k < rp.nwin; k++) {
					const struct as_rect *r =
						&pb->r[rp.win[k]];
					t0 = r->t0 < t0 ? r->t0 : t0;
					t1 = r->t1 > t1 ? r->t1 : t1;
				}
			}
			rp.nwin = 0;
			for (uint32_t i = 0; i < n; i++)
				if ((wide || !fixed[i]) && pb->r[i].t0 < t1 &&
				    t0 < pb->r[i].t1)
					rp.win[rp.nwin++] = i;
			/* A refill cannot be cut short: keep windows small. */
			if (rp.nwin > AS_STRIP_WINDOW_MAX)
				break;
			for (uint32_t k = 0; k < rp.nwin; k++)
				rp.save[k] = off[rp.win[k]];
			for (int o = 0; o < 4 && !done; o++) {
				if (o == 0 &&
				    as_strip_order(pb, 0, rp.win, rp.nwin))
					goto out;
				if (o == 1 && as_sort_u32(rp.win, rp.nwin,
							  by_start, pb))
					goto out;
				for (uint32_t k = rp.nwin; o >= 2 && k > 1;
				     k--) {
					uint32_t j = (uint32_t)(as_splitmix64(
								&rp.rng) %
							k);
					uint32_t t = rp.win[k - 1];
					rp.win[k - 1] = rp.win[j];
					rp.win[j] = t;
				}
				/* save[] follows win[]: refresh it. */
				for (uint32_t k = 0; k < rp.nwin; k++)
					rp.save[k] = off[rp.win[k]];
				uint64_t high = refill(&rp, deadline);
				if (high == UINT64_MAX - 1) {
					restore(&rp); /* out of time */
					break;
				}
				if (high < peak) {
					done = true;
					(*moves)++;
				} else if (high != UINT64_MAX) {
					restore(&rp);
				} else {
					restore(&rp);
					*err = as_strip_placer_error(rp.pl);
					goto out;
				}
				if (as_budget_past(budget, deadline))
					break;
			}
		}
		if (!done)
			break;
		peak = as_place_peak(pb, off);
	}
out:
	as_placer_destroy(rp.pl);
	free(rp.win);
	free(rp.save);
	return as_place_peak(pb, off);
}

/*
 * Window search: around a rectangle at the peak, free every rectangle that
 * shares its time (the window), hold every other rectangle that shares
 * time with the window where it is, and ask the exact search for the
 * window below the peak. Repeats while it succeeds and time is left.
 * Returns the number of windows improved; off[] is updated.
 */
#define AS_STRIP_WINDOW_FREE 512

struct by_off_desc_ctx {
	const uint64_t *off;
	const struct as_problem *pb;
};

/* Highest top first. */
static bool by_top_desc_off(uint32_t a, uint32_t b, const void *cv)
{
	const struct by_off_desc_ctx *c = cv;
	uint64_t ta = c->off[a] + c->pb->r[a].size;
	uint64_t tb = c->off[b] + c->pb->r[b].size;
	return ta > tb || (ta == tb && a < b);
}
#define AS_STRIP_WINDOW_ALL 4000

/*
 * A window's lowest-fit refills: the held rectangles of sub at their
 * fixed[] offsets, the free ones (fixed AS_NO_OFFSET) put back at their
 * lowest fit in greedy-size's order, by start, then in two seeded
 * shuffles. Returns 1 with so[] filled when one order keeps every top at
 * or below cap, 0 when none does, or a negative code. ids needs sub->n
 * entries.
 */
static int window_greedy(const struct as_problem *sub, const uint64_t *fixed,
			 uint64_t cap, uint64_t rng, uint64_t *so,
			 uint32_t *ids)
{
	struct as_placer *pl = as_placer_create(sub);
	uint32_t nf = 0;
	int found = 0;
	if (!pl)
		return AS_ENOMEM;
	bool held_low = true; /* a held one at the top leaves no room */
	for (uint32_t k = 0; k < sub->n; k++)
		if (fixed[k] == AS_NO_OFFSET)
			ids[nf++] = k;
		else
			held_low &= fixed[k] + sub->r[k].size <= cap;
	for (int o = 0; o < 4 && !found && held_low; o++) {
		if (o == 0 && as_sort_greedy_size(sub, ids, nf))
			goto nomem;
		if (o == 1 && as_sort_u32(ids, nf, by_start, sub))
			goto nomem;
		for (uint32_t k = nf; o >= 2 && k > 1; k--) {
			uint32_t j = (uint32_t)(as_splitmix64(&rng) % k);
			uint32_t t = ids[k - 1];
			ids[k - 1] = ids[j];
			ids[j] = t;
		}
		as_placer_reset(pl);
		for (uint32_t k = 0; k < sub->n; k++)
			if (fixed[k] != AS_NO_OFFSET)
				as_placer_put(pl, k, so[k] = fixed[k]);
		found = 1;
		for (uint32_t k = 0; k < nf && found; k++) {
			uint32_t i = ids[k];
			found = as_placer_find(pl, i, AS_FIT_LOWEST, &so[i],
					       NULL) &&
				so[i] + sub->r[i].size <= cap;
			if (found)
				as_placer_put(pl, i, so[i]);
		}
	}
	if (as_placer_nomem(pl))
		goto nomem;
	as_placer_destroy(pl);
	return found;
nomem:
	as_placer_destroy(pl);
	return AS_ENOMEM;
}

static uint32_t window_exact(const struct as_problem *pb, uint64_t *off,
			     uint64_t seed, double deadline,
			     const struct as_budget *budget, uint64_t nodes,
			     int *err)
{
	struct as_exact_stats st = {0};
	uint32_t n = pb->n, S = pb->nsections, wins = 0;
	uint32_t *mark = calloc((size_t)S + 2, sizeof(uint32_t));
	uint32_t *map = calloc(n, sizeof(uint32_t));
	uint8_t *role = calloc(n, 1); /* 1 free, 2 held */
	struct as_problem sub = *pb;
	uint64_t *fixed = calloc(AS_STRIP_WINDOW_ALL, sizeof(uint64_t));
	uint64_t *so = calloc(AS_STRIP_WINDOW_ALL, sizeof(uint64_t));
	uint32_t *ids = calloc(AS_STRIP_WINDOW_ALL, sizeof(uint32_t));
	uint64_t *load = calloc((size_t)S + 1, sizeof(uint64_t));
	uint64_t *times = calloc(2 * AS_STRIP_WINDOW_ALL, sizeof(uint64_t));
	sub.r = calloc(AS_STRIP_WINDOW_ALL, sizeof(*sub.r));
	*err = AS_ENOMEM;
	if (!mark || !map || !role || !fixed || !so || !ids || !load ||
	    !times || !sub.r)
		goto out;
	*err = AS_OK;
	/* Start wide, halve after a failure, double after a success. */
	uint32_t limit = AS_STRIP_WINDOW_FREE;
	/* The first window's refills are cheap: they run even at the
	 * deadline (its exact search does not). */
	for (uint32_t round = 0;
	     (round++ == 0 ? !as_budget_canceled(budget)
			   : !as_budget_past(budget, deadline)) &&
	     limit >= 16 && (!nodes || st.nodes < nodes);) {
		uint64_t peak = as_place_peak(pb, off);
		if (peak <= pb->lower_bound)
			break;
		uint32_t top = 0;
		while (off[top] + pb->r[top].size != peak)
			top++;
		const struct as_rect *rt = &pb->r[top];
		/*
		 * Free: the `want` highest rectangles sharing time with the
		 * top one (a window in time and in space); held: the others
		 * sharing time with those. Halve the window until it fits.
		 */
		uint32_t nf = 0, m = 0;
		uint64_t base = 0;
		bool fits = false;
		for (uint32_t want = limit; want >= 16; want /= 2) {
			m = 0;
			for (uint32_t i = 0; i < n; i++)
				if (pb->r[i].t0 < rt->t1 && rt->t0 < pb->r[i].t1)
					map[m++] = i;
			if (m > want) {
				struct by_off_desc_ctx c = {off, pb};
				if (as_sort_u32(map, m, by_top_desc_off, &c)) {
					*err = AS_ENOMEM;
					goto out;
				}
				m = want;
			}
			nf = m;
			/*
			 * The band: from the lowest free offset (aligned
			 * down) up. Held rectangles wholly below it do not
			 * matter; those reaching into it are clipped to it.
			 */
			uint8_t lg = 0;
			base = UINT64_MAX;
			for (uint32_t k = 0; k < m; k++) {
				uint32_t i = map[k];
				if (off[i] < base)
					base = off[i];
				if (pb->r[i].align_log2 > lg)
					lg = pb->r[i].align_log2;
			}
			base &= ~(((uint64_t)1 << lg) - 1);
			memset(role, 0, n);
			for (uint32_t k = 0; k < m; k++)
				role[map[k]] = 1;
			memset(mark, 0, ((size_t)S + 2) * sizeof(uint32_t));
			for (uint32_t k = 0; k < m; k++) {
				mark[pb->r[map[k]].t0]++;
				mark[pb->r[map[k]].t1]--;
			}
			uint32_t run = 0, acc = 0;
			for (uint32_t t = 0; t <= S; t++) {
				run += mark[t];
				uint32_t c = t < S && run > 0;
				mark[t] = acc;
				acc += c;
			}
			for (uint32_t i = 0; i < n && m <= AS_STRIP_WINDOW_ALL;
			     i++)
				if (!role[i] &&
				    off[i] + pb->r[i].size > base &&
				    mark[pb->r[i].t1] - mark[pb->r[i].t0] > 0) {
					role[i] = 2;
					map[m++] = i;
				}
			if (m <= AS_STRIP_WINDOW_ALL) {
				fits = true;
				break;
			}
		}
		if (!fits)
			break;
		/* Offsets in the band are counted from base. */
		for (uint32_t k = 0; k < m; k++) {
			uint32_t i = map[k];
			sub.r[k] = pb->r[i];
			fixed[k] = AS_NO_OFFSET;
			if (role[i] == 2) {
				uint64_t lo = off[i] > base ? off[i] : base;
				sub.r[k].size = off[i] + pb->r[i].size - lo;
				sub.r[k].align_log2 = 0;
				fixed[k] = lo - base;
			}
		}
		sub.n = m;
		/* Over a 700k-section malloc trace, a window of 512
		 * long-lived blocks took the exact search 1.1 GB. */
		sub.nsections = S;
		sub.times = pb->times;
		as_problem_compact(&sub, mark, times);
		as_problem_load(&sub, load);
		sub.lower_bound = 0;
		for (uint32_t t = 0; t < sub.nsections; t++)
			if (load[t] > sub.lower_bound)
				sub.lower_bound = load[t];
		double now = as_now_ms();
		if (sub.lower_bound > peak - 1 - base)
			break;
		/*
		 * The exact search while time is left, else (or when it
		 * fails) lowest-fit refills: cheap, so the first window
		 * gets them even at the deadline. A window the exact search
		 * failed on halves, whatever the refills did.
		 */
		int r = AS_EXACT_TIMEOUT;
		if (!as_budget_past(budget, deadline)) {
			/* A quarter of the time, at most 0.3 s (nodes=
			 * decides alone). */
			double slice = (deadline - now) / 4;
			if (slice > 300)
				slice = 300;
			if (nodes)
				slice = deadline - now;
			/* With nodes=, each window gets an eighth of what
			 * is left. */
			uint64_t share = nodes ? (nodes - st.nodes) / 8 + 1 : 0;
			r = as_exact_solve_fixed(&sub, fixed, peak - 1 - base,
						 now + slice, budget, share,
						 seed, so, &st);
			if (r < 0) {
				*err = r;
				break;
			}
		}
		if (r != AS_EXACT_FOUND) {
			int g = window_greedy(&sub, fixed, peak - 1 - base,
					      seed * 0x9e3779b97f4a7c15ULL +
						      wins,
					      so, ids);
			if (g < 0) {
				*err = g;
				break;
			}
			limit = nf / 2; /* a smaller window */
			if (!g)
				continue;
		} else {
			limit = nf * 2 < AS_STRIP_WINDOW_FREE
					? nf * 2
					: AS_STRIP_WINDOW_FREE;
		}
		for (uint32_t k = 0; k < m; k++)
			if (role[map[k]] == 1)
				off[map[k]] = so[k] + base;
		wins++;
	}
out:
	free(mark);
	free(map);
	free(role);
	free(fixed);
	free(so);
	free(ids);
	free(load);
	free(times);
	free(sub.r);
	return wins;
}

/*
 * Top swaps: the rectangle T whose top is the peak changes places with a
 * smaller one U that lives through all of T's time and whose own slot holds
 * T (both offsets aligned for the other, each slot clear of every other
 * rectangle over the newcomer's lifetime, checked by a scan). The peak
 * section's stack keeps its order but ends in U, which lowers the peak by
 * the difference; on malloc recordings, whose stacks are packed to the
 * alignment, what stands on top is all that is left to gain. U is the
 * smallest candidate that passes (at most 16 are checked a swap); repeats
 * while the peak goes down. O(n) per swap tried. Returns the swaps made.
 */
#define TOP_SWAP_TRIES 16

/* Whether [lo, lo + size) over sections [t0, t1) meets no rectangle but
 * a and b. */
static bool slot_clear(const struct as_problem *pb, const uint64_t *off,
		       uint32_t a, uint32_t b, uint64_t lo, uint64_t size,
		       uint32_t t0, uint32_t t1)
{
	for (uint32_t j = 0; j < pb->n; j++) {
		const struct as_rect *r = &pb->r[j];
		if (j != a && j != b && r->t0 < t1 && t0 < r->t1 &&
		    off[j] < lo + size && lo < off[j] + r->size)
			return false;
	}
	return true;
}

static bool by_size_asc(uint32_t a, uint32_t b, const void *cv)
{
	const struct as_problem *pb = cv;
	return pb->r[a].size < pb->r[b].size ||
	       (pb->r[a].size == pb->r[b].size && a < b);
}

static uint32_t top_swap(const struct as_problem *pb, uint64_t *off,
			 const struct as_budget *budget, double deadline,
			 uint32_t *cand, int *err)
{
	uint32_t swaps = 0, tries = 0;
	*err = AS_OK;
	/* One pass costs a few scans: it runs even at the deadline. */
	while (tries++ == 0 ? !as_budget_canceled(budget)
			    : !as_budget_past(budget, deadline)) {
		uint64_t peak = as_place_peak(pb, off);
		if (peak <= pb->lower_bound)
			break;
		uint32_t t = 0, m = 0;
		while (off[t] + pb->r[t].size != peak)
			t++;
		const struct as_rect *rt = &pb->r[t];
		for (uint32_t j = 0; j < pb->n; j++) {
			const struct as_rect *r = &pb->r[j];
			if (r->size < rt->size && r->t0 <= rt->t0 &&
			    rt->t1 <= r->t1 &&
			    off[j] % ((uint64_t)1 << rt->align_log2) == 0 &&
			    off[t] % ((uint64_t)1 << r->align_log2) == 0)
				cand[m++] = j;
		}
		if (as_sort_u32(cand, m, by_size_asc, pb)) {
			*err = AS_ENOMEM;
			break;
		}
		bool done = false;
		for (uint32_t k = 0; k < m && k < TOP_SWAP_TRIES && !done;
		     k++) {
			uint32_t u = cand[k];
			const struct as_rect *ru = &pb->r[u];
			/* T must end below the peak where it goes, and they
			 * share time: their new places must not meet. */
			if (off[u] + rt->size >= peak ||
			    (off[u] < off[t] + ru->size &&
			     off[t] < off[u] + rt->size))
				continue;
			if (!slot_clear(pb, off, t, u, off[u], rt->size, rt->t0,
					rt->t1) ||
			    !slot_clear(pb, off, t, u, off[t], ru->size, ru->t0,
					ru->t1))
				continue;
			uint64_t y = off[t];
			off[t] = off[u];
			off[u] = y;
			done = true;
		}
		if (!done || as_place_peak(pb, off) >= peak)
			break;
		swaps++;
	}
	return swaps;
}

/*
 * The window search on the best plan so far, with `share` of the time
 * left; records a round when it lowered the peak (*best then follows).
 */
static int window_step(const struct as_problem *pb, uint64_t *off,
		       struct as_strip_cfg *cfg, struct as_plan *p,
		       double deadline, double share, uint64_t *best)
{
	int err = AS_OK;
	uint32_t wins = 0, swaps = 0;
	uint32_t *cand = malloc(pb->n * sizeof(uint32_t));
	if (!cand)
		return AS_ENOMEM;
	/*
	 * Swaps, then a window, while a window lowers the peak: a window
	 * reorders the top of the stack, a swap then finds what stands on
	 * it.
	 */
	double now = as_now_ms();
	if (deadline > now)
		deadline = now + (deadline - now) * share;
	for (;;) {
		uint32_t k = top_swap(pb, off, cfg->budget, deadline, cand,
				      &err);
		*best = as_place_peak(pb, off);
		swaps += k;
		if (!err && k)
			err = as_strip_note(cfg, p, "top swap", *best);
		if (err || (wins && as_budget_past(cfg->budget, deadline)))
			break;
		uint32_t w = window_exact(pb, off, cfg->seed, deadline,
					  cfg->budget, cfg->nodes, &err);
		*best = as_place_peak(pb, off);
		wins += w;
		if (!err && w)
			err = as_strip_note(cfg, p, "window search", *best);
		if (err || !w)
			break;
	}
	free(cand);
	if (!err)
		err = as_plan_stat_int(p, "windows_improved", wins);
	if (!err)
		err = as_plan_stat_int(p, "top_swaps", swaps);
	return err;
}

/*
 * Greedy-size's start at the cost of one sweep: the rectangles of at least
 * 1/1024 of the bound (the cut doubled while more than 1024 of them, so
 * their finds stay few) go in greedy-size's order to their lowest fit, and
 * the sweep fits the rest around them. On malloc recordings the largest
 * ones set the peak: the plan lands within bytes of greedy-size's, which
 * costs several times more. Uses fixed[] (left zeroed) and ids as
 * scratch; *sweep_ms gets the sweep's time. Returns the peak (as
 * as_place_sweep; 0 with *err = AS_OK: no big ones, or all of them).
 */
#define GREEDY_BIG_DIV 1024
#define GREEDY_BIG_MAX 1024

static uint64_t greedy_big(const struct as_problem *pb, struct as_budget *b,
			   const struct as_budget *until, uint64_t *tmp,
			   uint8_t *fixed, uint32_t *ids, double *sweep_ms,
			   int *err)
{
	uint32_t n = pb->n, m = 0;
	*err = AS_OK;
	memset(fixed, 0, n);
	for (uint64_t cut = pb->lower_bound / GREEDY_BIG_DIV + 1; cut;
	     cut *= 2) {
		m = 0;
		for (uint32_t i = 0; i < n && m <= GREEDY_BIG_MAX; i++)
			if (pb->r[i].size >= cut)
				ids[m++] = i;
		if (m <= GREEDY_BIG_MAX || cut > UINT64_MAX / 2)
			break;
	}
	if (m == 0 || m >= n || m > GREEDY_BIG_MAX)
		return 0;
	*err = AS_ENOMEM;
	struct as_placer *pl = as_placer_create(pb);
	if (!pl || as_sort_greedy_size(pb, ids, m)) {
		as_placer_destroy(pl);
		return 0;
	}
	as_placer_budget(pl, b);
	for (uint32_t k = 0; k < m; k++) {
		uint32_t i = ids[k];
		if (!as_placer_find(pl, i, AS_FIT_LOWEST, &tmp[i], NULL)) {
			*err = as_strip_placer_error(pl);
			as_placer_destroy(pl);
			return 0;
		}
		as_placer_put(pl, i, tmp[i]);
		fixed[i] = 1;
	}
	double t0 = as_now_ms();
	uint64_t peak = as_place_sweep(pb, AS_FIT_LOWEST, fixed, pl, until,
				       tmp, err);
	*sweep_ms = as_now_ms() - t0;
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
 * Traces with too many overlapping pairs for the seed's method (hundreds of
 * thousands to millions of buffers): without incumbents greedy-size's start
 * (greedy_big), else the O(n log n) time sweep, first fit and best fit;
 * then "big first": the big rectangles (where the bytes are) get the full
 * method on their own, and the sweep fits the rest around them. The best of
 * these is kept, and the window search and top swaps work on it.
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
	bool windowed = false;
	int err = AS_ENOMEM;
	sub.r = calloc(n, sizeof(*sub.r));
	if (!tmp || !fixed || !map || !sub.r)
		goto out;
	/*
	 * The budget: a step starts only when its estimated cost fits in the
	 * time left. The first sweep (O(n log n), always run: without the
	 * baselines it is the first plan) gives the unit; a step visiting
	 * overlapping pairs costs about unit x pairs / (n log2 n) (measured:
	 * the skyline greedy and the middle tier take 0.7x that).
	 */
	double unit = 0, per_pair = 0;
	/*
	 * The first plan (always run, so the one step that may pass the
	 * deadline): without incumbents greedy-size's start, else (or where
	 * it has no big ones) the first-fit sweep, then the best-fit sweep
	 * when a unit fits. After greedy-size's start the plain sweeps are
	 * skipped: on the malloc recordings measured they never did better,
	 * and the window search makes more of the time.
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
		if (err == AS_ELIMIT) {
			char label[48];
			snprintf(label, sizeof(label), "%s cut", sweeps[f]);
			if ((err = as_strip_note(cfg, p, label, 0)))
				goto out;
			break;
		}
		if (err)
			goto out;
		if (peak == UINT64_MAX) {
			err = AS_EUNSUPPORTED;
			goto out;
		}
		if (first) {
			uint32_t lg = 1;
			while (lg < 63 && (2ULL << lg) <= n)
				lg++;
			/* A sweep's time (greedy-size's finds left out). */
			unit = f == 0 ? sweep_ms : as_now_ms() - t0;
			per_pair = unit / ((double)n * lg);
		}
		if ((err = as_strip_note(cfg, p, sweeps[f], peak)))
			goto out;
		if (peak < best) {
			best = peak;
			memcpy(off, tmp, n * sizeof(uint64_t));
		}
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
		if (peak == UINT64_MAX) {
			err = AS_EUNSUPPORTED;
			goto out;
		}
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
	if (err == AS_ELIMIT) {
		if ((err = as_strip_note(cfg, p, "big first, sweep cut", 0)))
			goto out;
		goto done;
	}
	if (err)
		goto out;
	if (peak == UINT64_MAX) {
		err = AS_EUNSUPPORTED;
		goto out;
	}
	if ((err = as_strip_note(cfg, p, "big first, sweep", peak)))
		goto out;
	if (peak < best) {
		best = peak;
		memcpy(off, tmp, n * sizeof(uint64_t));
	}
	/* The middle tier below gets what the window search leaves. */
	if ((err = window_step(pb, off, cfg, p, deadline, 0.6, &best)))
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
		if (err == AS_ELIMIT) {
			err = as_strip_note(cfg, p, "big, middle, sweep cut",
					    0);
			if (err)
				goto out;
			goto done;
		}
		if (err)
			goto out;
		if (peak == UINT64_MAX) {
			err = AS_EUNSUPPORTED;
			goto out;
		}
		if ((err = as_strip_note(cfg, p, "big, middle, sweep", peak)))
			goto out;
		if (peak < best) {
			best = peak;
			memcpy(off, tmp, n * sizeof(uint64_t));
		}
	}
done:
	/* Steps that did not fit leave their time to the window search. */
	if (!windowed && (err = window_step(pb, off, cfg, p, deadline, 0.6,
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
		peak = repair_peak(pb, off, fixed, cfg->seed, deadline,
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
