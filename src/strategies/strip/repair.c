/*
 * Strategy strip, the peak repair of the large-trace path (strip.h): the
 * window search with its lowest-fit refills, top swaps, and the re-placing
 * of the windows around the peak, each lowering the peak of a plan given.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/strip/strip.h"
#include "core/internal.h"
#include "strategies/strategy.h"

/* The peak repair's state (as_strip_repair_peak): a window and its placer. */
struct repair {
	const struct as_problem *pb;
	struct as_placer *pl;
	const struct as_budget *budget; /* also the placer's */
	uint64_t *off, *save;
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

/* A seeded Fisher-Yates shuffle of ids[0..n). */
static void shuffle(uint32_t *ids, uint32_t n, uint64_t *rng)
{
	for (uint32_t k = n; k > 1; k--) {
		uint32_t j = (uint32_t)(as_splitmix64(rng) % k);
		uint32_t t = ids[k - 1];
		ids[k - 1] = ids[j];
		ids[j] = t;
	}
}

uint64_t as_strip_repair_peak(const struct as_problem *pb, uint64_t *off,
			      const uint8_t *fixed, uint64_t seed,
			      double deadline, struct as_budget *budget,
			      uint32_t *moves, int *err)
{
	uint32_t n = pb->n;
	struct repair rp = {.pb = pb, .off = off, .budget = budget,
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
				if (o >= 2)
					shuffle(rp.win, rp.nwin, &rp.rng);
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

/* Free rectangles of the window search's first window, and its most. */
#define AS_STRIP_WINDOW_FREE 512
/* Rectangles, free and held, of a window the exact search gets. */
#define AS_STRIP_WINDOW_ALL 4000

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
		if (o >= 2)
			shuffle(ids, nf, &rng);
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

/*
 * Window search: around a rectangle at the peak, free every rectangle that
 * shares its time (the window), hold every other rectangle that shares
 * time with the window where it is, and ask the exact search for the
 * window below the peak. Repeats while it succeeds and time is left.
 * Returns the number of windows improved; off[] is updated.
 */
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
			as_strip_cover(pb, role, 1, mark);
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
		/*
		 * On its own sections: the exact search's memory grows with
		 * the sections, and a long trace has far more than a window.
		 */
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
 * smaller one U that lives through all of T's time, when T ends below the
 * peak at U's offset, both offsets are aligned for the other, the two new
 * places do not meet, and each is clear of every other rectangle over the
 * newcomer's lifetime (a scan). The peak then falls by what U is smaller:
 * on malloc recordings, whose stacks are packed to the alignment, what
 * stands on top is all that is left to gain. The TOP_SWAP_TRIES smallest
 * such U are tried, smallest first; repeats while the peak goes down.
 * O(n) a try, the cancel flag read before each.
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

/* Whether U may take T's place and T U's (all but the scans). */
static bool swap_fits(const struct as_problem *pb, const uint64_t *off,
		      uint32_t t, uint32_t u, uint64_t peak)
{
	const struct as_rect *rt = &pb->r[t], *ru = &pb->r[u];
	return ru->size < rt->size && ru->t0 <= rt->t0 && rt->t1 <= ru->t1 &&
	       off[u] % ((uint64_t)1 << rt->align_log2) == 0 &&
	       off[t] % ((uint64_t)1 << ru->align_log2) == 0 &&
	       off[u] + rt->size < peak &&
	       (off[u] >= off[t] + ru->size || off[t] >= off[u] + rt->size);
}

static uint32_t top_swap(const struct as_problem *pb, uint64_t *off,
			 const struct as_budget *budget, double deadline)
{
	uint32_t swaps = 0, passes = 0;
	/* One pass costs a few scans: it runs even at the deadline. */
	while (passes++ == 0 ? !as_budget_canceled(budget)
			     : !as_budget_past(budget, deadline)) {
		uint64_t peak = as_place_peak(pb, off);
		if (peak <= pb->lower_bound)
			break;
		uint32_t t = 0, m = 0, cand[TOP_SWAP_TRIES];
		while (off[t] + pb->r[t].size != peak)
			t++;
		/* The smallest candidates, by size then index, in order. */
		for (uint32_t j = 0; j < pb->n; j++) {
			if (!swap_fits(pb, off, t, j, peak))
				continue;
			uint32_t k = m < TOP_SWAP_TRIES ? m++ : m;
			while (k > 0 && pb->r[j].size < pb->r[cand[k - 1]].size)
				k--;
			if (k == TOP_SWAP_TRIES)
				continue;
			uint32_t last = m - 1;
			memmove(cand + k + 1, cand + k,
				(last - k) * sizeof(*cand));
			cand[k] = j;
		}
		bool done = false;
		for (uint32_t k = 0; k < m && !done; k++) {
			uint32_t u = cand[k];
			if (as_budget_canceled(budget))
				return swaps;
			if (!slot_clear(pb, off, t, u, off[u], pb->r[t].size,
					pb->r[t].t0, pb->r[t].t1) ||
			    !slot_clear(pb, off, t, u, off[t], pb->r[u].size,
					pb->r[u].t0, pb->r[u].t1))
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

/* The window step on the best plan so far (strip.h). */
int as_strip_window_step(const struct as_problem *pb, uint64_t *off,
			 struct as_strip_cfg *cfg, struct as_plan *p,
			 double deadline, double share, uint64_t *best)
{
	int err = AS_OK;
	uint32_t wins = 0, swaps = 0;
	/*
	 * Swaps, then a window, while a window lowers the peak: a window
	 * reorders the top of the stack, a swap then finds what stands on
	 * it.
	 */
	double now = as_now_ms();
	if (deadline > now)
		deadline = now + (deadline - now) * share;
	for (;;) {
		uint32_t k = top_swap(pb, off, cfg->budget, deadline);
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
	if (!err)
		err = as_plan_stat_int(p, "windows_improved", wins);
	if (!err)
		err = as_plan_stat_int(p, "top_swaps", swaps);
	return err;
}
