/*
 * The segment-tree placer (place/placer.h) against a plain one: for each
 * rectangle of a random order, the placed rectangles sharing its time are
 * collected one by one, sorted and scanned. The placer's shortcuts (leaves
 * only where rectangles start, per-subtree unions, path unions, blocks read
 * as one range where a size cannot fit, galloping under the merge frontier,
 * best fit stopping at an exact-size gap) must give the same offsets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
/* The placer's insides, for the tests that break its index on purpose. */
#include "strategies/place/placer.h"
#include "tap.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return as_splitmix64(&rng_state);
}

/*
 * n rectangles over S sections: mostly short lifetimes, some long, sizes
 * from a few classes (exact-size gaps appear) with a rare large one, and
 * alignment up to 2^align_max.
 */
static void random_problem(struct as_problem *pb, uint32_t n, uint32_t S,
			   uint8_t align_max)
{
	memset(pb, 0, sizeof(*pb));
	pb->r = calloc(n, sizeof(*pb->r));
	pb->times = calloc((size_t)S + 1, sizeof(uint64_t));
	pb->n = n;
	pb->nsections = S;
	for (uint32_t s = 0; s <= S; s++)
		pb->times[s] = s;
	static const uint64_t sizes[] = {8, 16, 24, 32, 48, 64, 96, 128, 256};
	for (uint32_t i = 0; i < n; i++) {
		struct as_rect *r = &pb->r[i];
		r->t0 = (uint32_t)(rnd() % S);
		uint32_t life = rnd() % 8 == 0 ? 1 + (uint32_t)(rnd() % S)
					       : 1 + (uint32_t)(rnd() % 12);
		r->t1 = r->t0 + life > S ? S : r->t0 + life;
		r->size = rnd() % 50 == 0 ? 4096 + rnd() % 8192
					  : sizes[rnd() % 9];
		r->align_log2 = align_max ? (uint8_t)(rnd() % (align_max + 1))
					  : 0;
		r->buf = i;
	}
}

static int by_lo(const void *a, const void *b)
{
	const struct as_span *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static uint64_t align_up(uint64_t x, uint8_t lg)
{
	uint64_t m = ((uint64_t)1 << lg) - 1;
	return (x + m) & ~m;
}

/* The plain placer: every placed rectangle sharing time, one by one. */
static uint64_t plain_find(const struct as_problem *pb, const uint8_t *placed,
			   const uint64_t *off, uint32_t i, enum as_fit fit,
			   struct as_span *g)
{
	const struct as_rect *r = &pb->r[i];
	uint32_t k = 0;
	for (uint32_t j = 0; j < pb->n; j++)
		if (placed[j] && pb->r[j].t0 < r->t1 && r->t0 < pb->r[j].t1)
			g[k++] = (struct as_span){off[j], off[j] + pb->r[j].size};
	qsort(g, k, sizeof(*g), by_lo);
	uint64_t cand = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
	for (uint32_t j = 0; j < k; j++) {
		if (g[j].lo > cand) {
			uint64_t a = align_up(cand, r->align_log2);
			if (a <= g[j].lo && g[j].lo - a >= r->size) {
				if (fit == AS_FIT_LOWEST)
					return a;
				if (g[j].lo - cand < best_gap) {
					best_gap = g[j].lo - cand;
					best = a;
				}
			}
		}
		if (g[j].hi > cand)
			cand = g[j].hi;
	}
	return best != UINT64_MAX ? best : align_up(cand, r->align_log2);
}

static void placer_matches_the_plain_greedy(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct as_problem pb;
		rng_state = seed;
		uint32_t n = 1500 + 500 * (uint32_t)(seed % 3);
		random_problem(&pb, n, 40 + 60 * (uint32_t)(seed % 4),
			       seed > 3 ? 4 : 0);
		struct as_placer *pl = as_placer_create(&pb);
		uint32_t *order = calloc(n, sizeof(uint32_t));
		uint64_t *off = calloc(n, sizeof(uint64_t));
		uint64_t *want = calloc(n, sizeof(uint64_t));
		uint8_t *placed = calloc(n, 1);
		struct as_span *g = calloc(n, sizeof(*g));
		CHECK(pl && order && off && want && placed && g);
		if (!pl || !order || !off || !want || !placed || !g)
			goto next;
		/* Largest first (the baselines' way), ties in random order. */
		for (uint32_t j = 0; j < n; j++)
			order[j] = j;
		for (uint32_t j = n; j > 1; j--) {
			uint32_t x = (uint32_t)(rnd() % j), t = order[j - 1];
			order[j - 1] = order[x];
			order[x] = t;
		}
		if (seed % 2 == 0)
			as_order_greedy_size(&pb, order);
		for (int f = 0; f < 2; f++) {
			enum as_fit fit = f ? AS_FIT_BEST : AS_FIT_LOWEST;
			uint64_t peak = as_place_order(pl, order, n, fit, off);
			memset(placed, 0, n);
			uint32_t same = 0;
			for (uint32_t j = 0; j < n; j++) {
				uint32_t i = order[j];
				want[i] = plain_find(&pb, placed, want, i, fit, g);
				placed[i] = 1;
				same += want[i] == off[i];
			}
			CHECK(peak != UINT64_MAX);
			CHECK_EQ_U64(same, n);
			if (same != n)
				printf("#   seed %llu, %s fit\n",
				       (unsigned long long)seed,
				       f ? "best" : "lowest");
		}
	next:
		as_placer_destroy(pl);
		free(order);
		free(off);
		free(want);
		free(placed);
		free(g);
		free(pb.r);
		free(pb.times);
	}
}

/*
 * The skyline greedy keeps only lower bounds of the rectangles' skyline
 * offsets and re-reads the popped one from a tree: it must drop the same
 * rectangle at the same offset, step by step, as the plain greedy that
 * looks at every unplaced rectangle against every placed one sharing time.
 */
static void the_skyline_greedy_drops_as_the_plain_one_does(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		rng_state = seed;
		struct as_problem pb;
		uint32_t n = 300 + 200 * (uint32_t)(seed % 3);
		random_problem(&pb, n, 30 + 50 * (uint32_t)(seed % 4),
			       seed > 3 ? 4 : 0);
		uint32_t *rank = calloc(n, sizeof(uint32_t));
		uint64_t *off = calloc(n, sizeof(uint64_t));
		uint64_t *want = calloc(n, sizeof(uint64_t));
		uint8_t *placed = calloc(n, 1);
		CHECK(rank && off && want && placed);
		if (!rank || !off || !want || !placed)
			goto next;
		for (uint32_t j = 0; j < n; j++)
			rank[j] = (uint32_t)(rnd() % (n / 3 + 1)) * n + j;
		int err;
		uint64_t peak = as_place_skyline(&pb, rank, NULL, 1e300, off,
						 &err);
		uint64_t high = 0;
		for (uint32_t step = 0; step < n; step++) {
			uint32_t pick = UINT32_MAX;
			uint64_t at = 0;
			for (uint32_t i = 0; i < n; i++) {
				if (placed[i])
					continue;
				uint64_t x = 0;
				for (uint32_t j = 0; j < n; j++)
					if (placed[j] &&
					    pb.r[j].t0 < pb.r[i].t1 &&
					    pb.r[i].t0 < pb.r[j].t1 &&
					    want[j] + pb.r[j].size > x)
						x = want[j] + pb.r[j].size;
				if (pick == UINT32_MAX || x < at ||
				    (x == at && rank[i] < rank[pick])) {
					pick = i;
					at = x;
				}
			}
			want[pick] = align_up(at, pb.r[pick].align_log2);
			placed[pick] = 1;
			if (want[pick] + pb.r[pick].size > high)
				high = want[pick] + pb.r[pick].size;
		}
		uint32_t same = 0;
		for (uint32_t i = 0; i < n; i++)
			same += off[i] == want[i];
		CHECK_EQ_U64(err, AS_OK);
		CHECK_EQ_U64(same, n);
		CHECK_EQ_U64(peak, high);
	next:
		free(rank);
		free(off);
		free(want);
		free(placed);
		free(pb.r);
		free(pb.times);
	}
}

/*
 * A walk may record its puts on a thread of their own (a spare processor):
 * each find waits only for the queued puts sharing time with it. Every
 * offset must be the one a placer recording its puts itself gives, for both
 * fits, through resets, and through pops (which stop that thread and leave
 * the placer reading every rectangle).
 */
static void puts_on_a_thread_of_their_own_give_the_same_offsets(void)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct as_problem pb;
		rng_state = 100 + seed;
		uint32_t n = 3000;
		random_problem(&pb, n, 50 + 150 * (uint32_t)(seed % 2),
			       seed > 2 ? 4 : 0);
		struct as_placer *one = as_placer_create(&pb);
		struct as_placer *two = as_placer_create(&pb);
		uint32_t *order = calloc(n, sizeof(uint32_t));
		uint64_t *a = calloc(n, sizeof(uint64_t));
		uint64_t *b = calloc(n, sizeof(uint64_t));
		CHECK(one && two && order && a && b);
		if (!one || !two || !order || !a || !b)
			goto next;
		as_placer_threaded(two);
		as_order_greedy_size(&pb, order);
		for (int f = 0; f < 2; f++) {
			enum as_fit fit = f ? AS_FIT_BEST : AS_FIT_LOWEST;
			uint64_t pa = as_place_order(one, order, n, fit, a);
			uint64_t pb2 = as_place_order(two, order, n, fit, b);
			CHECK(pa != UINT64_MAX);
			CHECK_EQ_U64(pb2, pa);
			CHECK(memcmp(a, b, n * sizeof(*a)) == 0);
		}
		/* Pops in the middle of a walk, then finds of the popped. */
		uint32_t same = 0, asked = 0;
		for (uint32_t j = 0; j < n; j += 97) {
			as_placer_pop(one, order[j]);
			as_placer_pop(two, order[j]);
		}
		for (uint32_t j = 0; j < n; j += 97) {
			uint64_t x = 0, y = 1;
			CHECK(as_placer_find(one, order[j], AS_FIT_LOWEST, &x,
					     NULL));
			CHECK(as_placer_find(two, order[j], AS_FIT_LOWEST, &y,
					     NULL));
			same += x == y;
			asked++;
		}
		CHECK_EQ_U64(same, asked);
		CHECK(!as_placer_nomem(two));
	next:
		as_placer_destroy(one);
		as_placer_destroy(two);
		free(order);
		free(a);
		free(b);
		free(pb.r);
		free(pb.times);
	}
}

/*
 * Take a trial back, by x (the step's draw, 0-9, when it put nothing): the
 * last put (x below 9: the exact undo), or with out_of_order any one
 * (x 9: the placer goes stale). stack holds the *ns placed ones, last put
 * last.
 */
static void take_back(struct as_placer *pl, uint8_t *placed, uint32_t *stack,
		      uint32_t *ns, uint64_t x, bool out_of_order)
{
	if (x < 9 && *ns) {
		placed[stack[--*ns]] = 0;
		as_placer_pop(pl, stack[*ns]);
	} else if (x == 9 && *ns && out_of_order) {
		uint32_t k = (uint32_t)(rnd() % *ns);
		placed[stack[k]] = 0;
		as_placer_pop(pl, stack[k]);
		stack[k] = stack[--*ns];
	}
}

/*
 * Trials taken back (strip's tuning): puts popped last first keep the
 * per-subtree unions exact through an undo log (as_placer_undo); a pop out
 * of that order, or any pop without the log, falls back to reading every
 * rectangle. Either way every query must give
 * what the plain placer gives for the rectangles placed at that moment.
 */
static void popped_trials_leave_the_placer_as_before(void)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct as_problem pb;
		rng_state = 100 + seed;
		uint32_t n = 600;
		random_problem(&pb, n, 80, seed > 2 ? 3 : 0);
		struct as_placer *pl = as_placer_create(&pb);
		uint64_t *off = calloc(n, sizeof(uint64_t));
		uint8_t *placed = calloc(n, 1);
		uint32_t *stack = calloc(n, sizeof(uint32_t));
		struct as_span *g = calloc(n, sizeof(*g));
		CHECK(pl && off && placed && stack && g);
		if (!pl || !off || !placed || !stack || !g)
			goto next;
		uint32_t ns = 0, bad = 0, asked = 0;
		if (seed != 3) /* seed 3: no log, every pop goes stale */
			as_placer_undo(pl);
		as_placer_reset(pl);
		for (uint32_t step = 0; step < 3000; step++) {
			uint32_t i = (uint32_t)(rnd() % n);
			uint64_t x = rnd() % 10;
			if (x < 6 && !placed[i]) {
				uint64_t o = 0;
				as_placer_find(pl, i, AS_FIT_LOWEST, &o, NULL);
				asked++;
				bad += o != plain_find(&pb, placed, off, i,
						       AS_FIT_LOWEST, g);
				as_placer_put(pl, i, o);
				off[i] = o;
				placed[i] = 1;
				stack[ns++] = i;
			} else {
				take_back(pl, placed, stack, &ns, x,
					  seed % 2 == 0);
			}
			if (step % 500 == 499)
				as_placer_reset(pl), ns = 0,
					memset(placed, 0, n);
		}
		CHECK(asked > 1000);
		CHECK_EQ_U64(bad, 0);
		if (bad)
			printf("#   seed %llu\n", (unsigned long long)seed);
		CHECK(!as_placer_nomem(pl));
	next:
		as_placer_destroy(pl);
		free(off);
		free(placed);
		free(stack);
		free(g);
		free(pb.r);
		free(pb.times);
	}
}

/* Best fit takes the smallest gap, the lowest of equal ones, else the top. */
static void best_fit_takes_the_lowest_of_the_tightest_gaps(void)
{
	struct as_rect r[6] = {
		{10, 0, 4, 0, 0}, {4, 0, 4, 1, 0}, {10, 0, 4, 2, 0},
		{4, 0, 4, 3, 0},  {10, 0, 4, 4, 0}, {4, 1, 2, 5, 0},
	};
	uint64_t times[5] = {0, 1, 2, 3, 4};
	struct as_problem pb = {r, 6, 4, 0, times};
	struct as_placer *pl = as_placer_create(&pb);
	CHECK(pl != NULL);
	if (!pl)
		return;
	/* 0-10 used, 10-14 free (4), 14-24 used, 24-30 free (6), 30-40. */
	as_placer_put(pl, 0, 0);
	as_placer_put(pl, 2, 14);
	as_placer_put(pl, 4, 30);
	uint64_t off = 0, gap = 0;
	CHECK(as_placer_find(pl, 5, AS_FIT_BEST, &off, &gap));
	CHECK_EQ_U64(off, 10);
	CHECK_EQ_U64(gap, 4);
	CHECK(as_placer_find(pl, 5, AS_FIT_LOWEST, &off, &gap));
	CHECK_EQ_U64(off, 10);
	as_placer_put(pl, 1, 10);
	CHECK(as_placer_find(pl, 5, AS_FIT_BEST, &off, &gap));
	CHECK_EQ_U64(off, 24);
	CHECK_EQ_U64(gap, 6);
	as_placer_put(pl, 3, 24);
	CHECK(as_placer_find(pl, 5, AS_FIT_BEST, &off, &gap));
	CHECK_EQ_U64(off, 40);
	CHECK_EQ_U64(gap, UINT64_MAX);
	as_placer_destroy(pl);
}

/*
 * Memory crowded with long-lived rectangles: hundreds of runs in one set,
 * most gaps between them too small for the queries, a few that fit, some
 * right after a block of 64 runs. Each query (short-lived, so the sets of
 * earlier queries come in too) must land where the plain placer puts it:
 * the walk through one set's runs passes whole blocks of small gaps, and
 * not one run more.
 */
static void crowded_memory_is_walked_as_the_plain_greedy_does(void)
{
	for (uint64_t seed = 1; seed <= 8; seed++) {
		rng_state = seed;
		uint32_t S = 24, nlong = 700 + (uint32_t)(rnd() % 200);
		uint32_t n = nlong + 300;
		struct as_problem pb;
		memset(&pb, 0, sizeof(pb));
		pb.r = calloc(n, sizeof(*pb.r));
		pb.times = calloc((size_t)S + 1, sizeof(uint64_t));
		uint64_t *off = calloc(n, sizeof(uint64_t));
		uint8_t *placed = calloc(n, 1);
		struct as_span *g = calloc(n, sizeof(*g));
		CHECK(pb.r && pb.times && off && placed && g);
		if (!pb.r || !pb.times || !off || !placed || !g)
			goto next;
		pb.n = n;
		pb.nsections = S;
		for (uint32_t t = 0; t <= S; t++)
			pb.times[t] = t;
		for (uint32_t i = 0; i < n; i++) {
			struct as_rect *r = &pb.r[i];
			bool lasting = i < nlong;
			r->t0 = lasting ? 0 : (uint32_t)(rnd() % (S - 3));
			r->t1 = lasting ? S : r->t0 + 1 + (uint32_t)(rnd() % 3);
			r->size = 8 * (1 + rnd() % (lasting ? 8 : 5));
			r->align_log2 = lasting ? 0 : (uint8_t)(rnd() % 5);
			r->buf = i;
		}
		struct as_placer *pl = as_placer_create(&pb);
		CHECK(pl != NULL);
		if (!pl)
			goto next;
		as_placer_reset(pl);
		/* Gaps of 8 inside the blocks of 64 runs (in odd seeds a wide
		 * one now and then), wide ones after most blocks' last run. */
		uint64_t at = 0;
		for (uint32_t i = 0; i < nlong; i++) {
			uint64_t wide = 40 + 8 * (rnd() % 6);
			at += i % 64 == 0 && i && rnd() % 4	 ? wide
			      : seed % 2 && rnd() % 100 == 0 ? wide
							     : 8;
			off[i] = at;
			at += pb.r[i].size;
			as_placer_put(pl, i, off[i]);
			placed[i] = 1;
		}
		uint32_t same = 0;
		for (uint32_t i = nlong; i < n; i++) {
			enum as_fit fit = i % 3 ? AS_FIT_BEST : AS_FIT_LOWEST;
			uint64_t got = UINT64_MAX;
			CHECK(as_placer_find(pl, i, fit, &got, NULL));
			off[i] = plain_find(&pb, placed, off, i, fit, g);
			same += got == off[i];
			as_placer_put(pl, i, off[i]);
			placed[i] = 1;
		}
		CHECK_EQ_U64(same, n - nlong);
		as_placer_destroy(pl);
	next:
		free(pb.r);
		free(pb.times);
		free(off);
		free(placed);
		free(g);
	}
}

/*
 * A trace's buffers with times of `scale` ticks a step from `base`: the
 * problem's sections are its distinct times in order, whether they fit in
 * 32 bits (sorted with their rectangles) or not (sorted alone).
 */
static void check_sections(uint64_t base, uint64_t scale, uint64_t seed,
			   struct as_problem *pb)
{
	struct as_builder *b = as_builder_create("scaled", "csv");
	struct as_diag d;
	rng_state = seed;
	for (uint32_t i = 0; i < 3000; i++) {
		uint64_t t0 = rnd() % 2000, t1 = t0 + 1 + rnd() % (i % 7 ? 9 : 900);
		char name[16];
		snprintf(name, sizeof(name), "%u", i);
		CHECK(as_builder_add_timed(b, name, 1 + rnd() % 64, 1,
					   base + t0 * scale, base + t1 * scale,
					   i + 2, &d) >= 0);
	}
	struct as_trace *t = NULL;
	CHECK(as_builder_finish(b, &t, &d) == AS_OK);
	CHECK(t && as_problem_init(pb, t, 0) == AS_OK);
	for (uint32_t s = 1; t && s <= pb->nsections; s++)
		CHECK(pb->times[s - 1] < pb->times[s]);
	uint8_t *used = calloc((size_t)pb->nsections + 1, 1);
	for (uint32_t k = 0; t && k < pb->n; k++) {
		const struct as_buffer *x = &t->buffers[pb->r[k].buf];
		CHECK_EQ_U64(pb->times[pb->r[k].t0], x->start);
		CHECK_EQ_U64(pb->times[pb->r[k].t1], x->end);
		used[pb->r[k].t0] = used[pb->r[k].t1] = 1;
	}
	for (uint32_t s = 0; t && s <= pb->nsections; s++)
		CHECK(used[s]);
	free(used);
	as_trace_destroy(t);
}

static void sections_are_the_distinct_times_at_any_time_scale(void)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct as_problem small, large;
		check_sections(0, 1, seed, &small);
		check_sections(70000000000ull, 1ull << 33, seed, &large);
		CHECK_EQ_U64(small.n, large.n);
		CHECK_EQ_U64(small.nsections, large.nsections);
		for (uint32_t k = 0; k < small.n && k < large.n; k++) {
			CHECK_EQ_U64(small.r[k].t0, large.r[k].t0);
			CHECK_EQ_U64(small.r[k].t1, large.r[k].t1);
		}
		as_problem_finish(&small);
		as_problem_finish(&large);
	}
}

static void a_part_on_its_own_sections_keeps_its_overlaps_loads_and_lengths(void)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		rng_state = seed;
		struct as_problem pb, part;
		random_problem(&pb, 400, 5000, 0);
		for (uint32_t s = 1; s <= pb.nsections; s++)
			pb.times[s] = pb.times[s - 1] + 1 + rnd() % 100;
		/* Every third rectangle: a part of the trace's time. */
		part = pb;
		part.r = calloc(pb.n, sizeof(*part.r));
		part.n = 0;
		for (uint32_t i = 0; i < pb.n; i += 3)
			part.r[part.n++] = pb.r[i];
		uint32_t *mark = calloc((size_t)pb.nsections + 2,
					sizeof(uint32_t));
		uint64_t *times = calloc(2 * (size_t)part.n, sizeof(uint64_t));
		uint64_t *load = calloc((size_t)pb.nsections + 1,
					sizeof(uint64_t));
		uint64_t *cload = calloc(2 * (size_t)part.n, sizeof(uint64_t));
		struct as_problem before = part;
		before.r = calloc(part.n, sizeof(*before.r));
		memcpy(before.r, part.r, part.n * sizeof(*part.r));
		as_problem_compact(&part, mark, times);
		CHECK(part.nsections < 2 * part.n);
		for (uint32_t a = 0; a < part.n; a++) {
			const struct as_rect *p = &part.r[a], *q = &before.r[a];
			CHECK(p->t0 < p->t1);
			CHECK_EQ_U64(part.times[p->t1] - part.times[p->t0],
				     pb.times[q->t1] - pb.times[q->t0]);
			for (uint32_t b = 0; b < part.n; b++) {
				const struct as_rect *pp = &part.r[b];
				const struct as_rect *qq = &before.r[b];
				CHECK((p->t0 < pp->t1 && pp->t0 < p->t1) ==
				      (q->t0 < qq->t1 && qq->t0 < q->t1));
			}
		}
		/* The loads: each old section's is its new section's. */
		as_problem_load(&before, load);
		as_problem_load(&part, cload);
		uint8_t *edge = calloc((size_t)pb.nsections + 1, 1);
		for (uint32_t i = 0; i < part.n; i++)
			edge[before.r[i].t0] = edge[before.r[i].t1] = 1;
		uint32_t c = 0, seen = 0;
		for (uint32_t t = 0; t < pb.nsections; t++) {
			if (edge[t] && seen++)
				c++;
			if (seen && c < part.nsections)
				CHECK_EQ_U64(load[t], cload[c]);
			else
				CHECK_EQ_U64(load[t], 0);
		}
		free(edge);
		free(before.r);
		free(part.r);
		free(mark);
		free(times);
		free(load);
		free(cload);
		free(pb.r);
		free(pb.times);
	}
}

/*
 * A limit counts the steps of every find against one budget, which two
 * placers can share: a walk takes the same steps every time, finishes with
 * the same offsets when they suffice, and stops (AS_ELIMIT) once none are
 * left when they do not.
 */
static void a_walk_stops_once_its_steps_run_out_and_takes_as_many_each_time(
	void)
{
	struct as_problem pb;
	rng_state = 41;
	uint32_t n = 2000;
	random_problem(&pb, n, 120, 0);
	struct as_placer *a = as_placer_create(&pb);
	struct as_placer *b = as_placer_create(&pb);
	uint32_t *order = calloc(n, sizeof(uint32_t));
	uint64_t *off = calloc(n, sizeof(uint64_t));
	uint64_t *want = calloc(n, sizeof(uint64_t));
	CHECK(a && b && order && off && want);
	if (a && b && order && off && want) {
		for (uint32_t j = 0; j < n; j++)
			order[j] = j;
		as_order_greedy_size(&pb, order);
		uint64_t peak = as_place_order(a, order, n, AS_FIT_BEST, want);
		struct as_budget left = {.left = UINT64_MAX, .limited = true};
		as_placer_budget(b, &left);
		CHECK_EQ_U64(as_place_order(b, order, n, AS_FIT_BEST, off),
			     peak);
		CHECK(memcmp(off, want, n * sizeof(*off)) == 0);
		uint64_t steps = UINT64_MAX - left.left;
		CHECK(steps >= n); /* at least a look a find */
		/* Shared: the second walk takes as many again. */
		as_placer_budget(a, &left);
		CHECK_EQ_U64(as_place_order(a, order, n, AS_FIT_BEST, off),
			     peak);
		CHECK_EQ_U64(UINT64_MAX - left.left, 2 * steps);
		/* A sixteenth short: on pace within its limit until the end
		 * (see as_steps_behind), it runs out of steps. */
		struct as_budget again = {.left = steps - steps / 16,
					  .limited = true};
		as_placer_budget(b, &again);
		CHECK_EQ_U64(as_place_order(b, order, n, AS_FIT_BEST, off),
			     UINT64_MAX);
		CHECK_EQ_U64(again.left, 0);
		CHECK_EQ_U64(as_placer_error(b), AS_ELIMIT);
	}
	as_placer_destroy(a);
	as_placer_destroy(b);
	free(order);
	free(off);
	free(want);
	free(pb.r);
	free(pb.times);
}

/*
 * A walk that has spent s >= a quarter of its L steps and, at its pace so
 * far, would take more than L (1 + L / 4s) for all its buffers (2L at a
 * quarter, 1.5L at half, 1.25L at the end) is behind: it stops there, not
 * when its steps run out. Before a quarter is spent, or on a pace within
 * that, it goes on; without a limit it is never behind.
 */
static void a_walk_far_behind_its_pace_stops_once_a_quarter_is_spent(void)
{
	struct as_budget left = {.left = 80, .limited = true};
	/* 20 of 100 spent: under a quarter, however few buffers are placed. */
	CHECK(!as_steps_behind(&left, 100, 1, 1000));
	left.left = 70; /* 30 spent: the bar is 100 (1 + 100 / 120), 183 */
	CHECK(as_steps_behind(&left, 100, 10, 100));   /* on pace for 300 */
	CHECK(as_steps_behind(&left, 100, 16, 100));   /* for 187 */
	CHECK(!as_steps_behind(&left, 100, 17, 100));  /* for 176 */
	CHECK(!as_steps_behind(&left, 100, 50, 100));  /* for 60 */
	left.left = 50; /* half spent: the bar is 150 */
	CHECK(as_steps_behind(&left, 100, 33, 100));   /* for 152 */
	CHECK(!as_steps_behind(&left, 100, 34, 100));  /* for 147 */
	left.left = 0; /* all spent: the bar is 125 */
	CHECK(as_steps_behind(&left, 100, 79, 100));   /* for 127 */
	CHECK(!as_steps_behind(&left, 100, 81, 100));  /* for 123 */
	CHECK(!as_steps_behind(NULL, 100, 1, 100));
	left.limited = false; /* without a limit, never behind */
	CHECK(!as_steps_behind(&left, 100, 1, 100));
	left = (struct as_budget){.left = 1ull << 62, .limited = true};
	/* half of 2^63 spent: no overflow */
	CHECK(as_steps_behind(&left, 1ull << 63, 1, UINT32_MAX));
	CHECK(!as_steps_behind(&left, 1ull << 63, UINT32_MAX / 2, UINT32_MAX));

	/* A walk: a query's steps grow with the rectangles placed before it,
	 * so with an eighth of the steps it needs, it falls behind and stops
	 * with steps left; with all of them it ends with the same offsets. */
	struct as_problem pb;
	rng_state = 43;
	uint32_t n = 2000;
	random_problem(&pb, n, 120, 0);
	struct as_placer *pl = as_placer_create(&pb);
	uint32_t *order = calloc(n, sizeof(uint32_t));
	uint64_t *off = calloc(n, sizeof(uint64_t));
	uint64_t *want = calloc(n, sizeof(uint64_t));
	CHECK(pl && order && off && want);
	if (pl && order && off && want) {
		for (uint32_t j = 0; j < n; j++)
			order[j] = j;
		as_order_greedy_size(&pb, order);
		struct as_budget all = {.left = UINT64_MAX, .limited = true};
		as_placer_budget(pl, &all);
		uint64_t peak = as_place_order(pl, order, n, AS_FIT_BEST, want);
		uint64_t steps = UINT64_MAX - all.left, eighth = steps / 8;
		left = (struct as_budget){.left = eighth, .limited = true};
		as_placer_budget(pl, &left);
		CHECK_EQ_U64(as_place_order(pl, order, n, AS_FIT_BEST, off),
			     UINT64_MAX);
		CHECK_EQ_U64(as_placer_error(pl), AS_ELIMIT);
		CHECK(left.left > 0 && eighth - left.left >= eighth / 4);
		left.left = steps;
		as_placer_budget(pl, &left);
		CHECK_EQ_U64(as_place_order(pl, order, n, AS_FIT_BEST, off),
			     peak);
		CHECK(memcmp(off, want, n * sizeof(*off)) == 0);
		CHECK_EQ_U64(left.left, 0);
	}
	as_placer_destroy(pl);
	free(order);
	free(off);
	free(want);
	free(pb.r);
	free(pb.times);
}

/*
 * as_placer_check over a walk of random puts, pops last put first (undone
 * exactly with the log), pops out of order (the unions go stale) and
 * resets: it finds nothing broken at any point, with the log or without.
 */
static void the_check_finds_nothing_after_puts_pops_and_resets(void)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct as_problem pb;
		rng_state = 300 + seed;
		uint32_t n = 500;
		random_problem(&pb, n, 70, seed > 2 ? 3 : 0);
		struct as_placer *pl = as_placer_create(&pb);
		uint8_t *placed = calloc(n, 1);
		uint32_t *stack = calloc(n, sizeof(uint32_t));
		CHECK(pl && placed && stack);
		if (!pl || !placed || !stack)
			goto next;
		if (seed != 3) /* seed 3: no log, every pop goes stale */
			as_placer_undo(pl);
		uint32_t ns = 0, checks = 0, broken = 0;
		char msg[256] = "";
		for (uint32_t step = 0; step < 2000; step++) {
			uint32_t i = (uint32_t)(rnd() % n);
			uint64_t x = rnd() % 10;
			if (x < 6 && !placed[i]) {
				uint64_t o = 0;
				CHECK(as_placer_find(pl, i, x % 2 ? AS_FIT_BEST
								  : AS_FIT_LOWEST,
						     &o, NULL));
				as_placer_put(pl, i, o);
				placed[i] = 1;
				stack[ns++] = i;
			} else {
				take_back(pl, placed, stack, &ns, x,
					  seed % 2 == 0);
			}
			if (step % 25 == 24) {
				char m[256];
				uint64_t b = as_placer_check(pl, m, sizeof(m));
				if (b && !broken)
					memcpy(msg, m, sizeof(m));
				broken += b != 0;
				checks++;
			}
			if (step % 700 == 699) {
				as_placer_reset(pl);
				ns = 0;
				memset(placed, 0, n);
				broken += as_placer_check(pl, NULL, 0) != 0;
			}
		}
		CHECK(checks >= 80);
		CHECK_EQ_U64(broken, 0);
		if (broken)
			printf("#   seed %llu: %s\n", (unsigned long long)seed,
			       msg);
	next:
		as_placer_destroy(pl);
		free(placed);
		free(stack);
		free(pb.r);
		free(pb.times);
	}
}

/*
 * With the puts recorded on a thread of their own, the check first waits
 * for them all: after whole walks of both fits, and after pops in the
 * middle of one, it finds nothing broken.
 */
static void the_check_finds_nothing_with_puts_on_their_own_thread(void)
{
	for (uint64_t seed = 1; seed <= 2; seed++) {
		struct as_problem pb;
		rng_state = 400 + seed;
		uint32_t n = 2000;
		random_problem(&pb, n, 60 + 100 * (uint32_t)seed, 4);
		struct as_placer *pl = as_placer_create(&pb);
		uint32_t *order = calloc(n, sizeof(uint32_t));
		uint64_t *off = calloc(n, sizeof(uint64_t));
		CHECK(pl && order && off);
		if (!pl || !order || !off)
			goto next;
		as_placer_threaded(pl);
		as_order_greedy_size(&pb, order);
		char msg[256] = "";
		for (int f = 0; f < 2; f++) {
			enum as_fit fit = f ? AS_FIT_BEST : AS_FIT_LOWEST;
			CHECK(as_place_order(pl, order, n, fit, off) !=
			      UINT64_MAX);
			CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);
		}
		/* Half a walk, the check while puts may still be queued. */
		as_placer_reset(pl);
		for (uint32_t j = 0; j < n / 2; j++) {
			uint64_t o = 0;
			CHECK(as_placer_find(pl, order[j], AS_FIT_LOWEST, &o,
					     NULL));
			as_placer_put(pl, order[j], o);
		}
		CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);
		for (uint32_t j = 0; j < n / 2; j += 31)
			as_placer_pop(pl, order[j]);
		CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);
		if (msg[0])
			printf("#   seed %llu: %s\n", (unsigned long long)seed,
			       msg);
	next:
		as_placer_destroy(pl);
		free(order);
		free(off);
		free(pb.r);
		free(pb.times);
	}
}

/* A small walk for the tests that break the index: n rectangles placed
 * lowest fit in index order, the log on when `undo`. */
static struct as_placer *small_walk(struct as_problem *pb, uint32_t n,
				    bool undo)
{
	rng_state = 77;
	random_problem(pb, n, 40, 0);
	struct as_placer *pl = as_placer_create(pb);
	if (!pl)
		return NULL;
	if (undo)
		as_placer_undo(pl);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t o = 0;
		if (!as_placer_find(pl, i, AS_FIT_LOWEST, &o, NULL)) {
			as_placer_destroy(pl);
			return NULL;
		}
		as_placer_put(pl, i, o);
	}
	return pl;
}

/* A rectangle put twice (no pop between) is recorded twice: its node's
 * runs and counts no longer match the rectangles, and the check says so. */
static void the_check_finds_a_rectangle_put_twice(void)
{
	struct as_problem pb;
	struct as_placer *pl = small_walk(&pb, 300, false);
	CHECK(pl != NULL);
	if (pl) {
		char msg[256];
		CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);
		as_placer_put(pl, 7, pl->off[7]);
		CHECK(as_placer_check(pl, msg, sizeof(msg)) > 0);
		CHECK(strstr(msg, "node") != NULL);
		printf("#   %s\n", msg);
	}
	as_placer_destroy(pl);
	free(pb.r);
	free(pb.times);
}

/* The first node of pl with runs, at or above `from`; 0: none. */
static uint32_t node_with_runs(const struct as_placer *pl, uint32_t from)
{
	for (uint32_t v = from; v < 2 * pl->size; v++)
		if (pl->node[v].n)
			return v;
	return 0;
}

/*
 * Each part of the index broken by hand in turn (a node's run moved, a
 * count off by one, a run missing from a subtree's union, a path union a
 * query would read as it is): the check counts it
 * and words it, and finds nothing once it is put back.
 */
static void the_check_finds_each_part_of_the_index_broken(void)
{
	struct as_problem pb;
	struct as_placer *pl = small_walk(&pb, 400, true);
	CHECK(pl != NULL);
	if (!pl)
		goto out;
	char msg[256];
	CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);

	uint32_t v = node_with_runs(pl, pl->size); /* a leaf */
	CHECK(v != 0);
	struct as_span *s = as_runs_v(&pl->node[v]), keep = s[0];
	s[0].lo += 1;
	CHECK(as_placer_check(pl, msg, sizeof(msg)) > 0);
	CHECK(strstr(msg, "node") != NULL);
	printf("#   moved run: %s\n", msg);
	s[0] = keep;
	CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);

	pl->sub[v]++;
	CHECK(as_placer_check(pl, msg, sizeof(msg)) > 0);
	CHECK(strstr(msg, "sub") != NULL);
	printf("#   count: %s\n", msg);
	pl->sub[v]--;

	uint32_t a = 1;
	while (a < pl->nparts && pl->part[a].n < 2)
		a++;
	CHECK(a < pl->nparts);
	if (a < pl->nparts) {
		pl->part[a].n--;
		CHECK(as_placer_check(pl, msg, sizeof(msg)) > 0);
		CHECK(strstr(msg, "union") != NULL);
		printf("#   union: %s\n", msg);
		pl->part[a].n++;
	}

	/* A find brings the path unions of its leaves up to date; one of
	 * them losing a run is seen. */
	uint64_t o;
	CHECK(as_placer_find(pl, 0, AS_FIT_LOWEST, &o, NULL));
	uint32_t p = 1;
	while (p < pl->npath &&
	       !(pl->node[p].n && pl->path[p].n && pl->path_at[p] >= pl->ver[p]))
		p++;
	CHECK(p < pl->npath);
	if (p < pl->npath) {
		struct as_span *ps = as_runs_v(&pl->path[p]), pk = ps[0];
		ps[0].hi = ps[0].lo + (ps[0].hi - ps[0].lo) / 2;
		if (ps[0].hi == ps[0].lo)
			ps[0].hi++;
		CHECK(as_placer_check(pl, msg, sizeof(msg)) > 0);
		printf("#   path: %s\n", msg);
		ps[0] = pk;
	}
	CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);
out:
	as_placer_destroy(pl);
	free(pb.r);
	free(pb.times);
}

/*
 * A set of more than one block of runs (long-lived rectangles with gaps
 * between them), its first block's largest gap brought up to date and then
 * spoiled: the check recomputes it and says so.
 */
static void the_check_finds_a_wrong_block_maximum(void)
{
	uint32_t n = 3 * AS_BLK, S = 4;
	struct as_rect *r = calloc(n, sizeof(*r));
	uint64_t times[5] = {0, 1, 2, 3, 4};
	struct as_problem pb = {r, n, S, 0, times};
	struct as_placer *pl = NULL;
	CHECK(r != NULL);
	if (!r)
		return;
	for (uint32_t i = 0; i < n; i++)
		r[i] = (struct as_rect){8, 0, S, i, 0};
	pl = as_placer_create(&pb);
	CHECK(pl != NULL);
	if (!pl)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		as_placer_put(pl, i, 16 * (uint64_t)i + 8 * (i % 3 == 0));
	char msg[256];
	CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);
	struct runs *big = NULL;
	for (uint32_t v = 1; v < 2 * pl->size && !big; v++)
		if (pl->node[v].n > AS_BLK)
			big = &pl->node[v];
	CHECK(big != NULL);
	if (big) {
		uint64_t m = as_runs_block_max(big, 0);
		as_runs_tail(big)[1] = m + 1;
		CHECK(as_placer_check(pl, msg, sizeof(msg)) > 0);
		CHECK(strstr(msg, "block") != NULL);
		printf("#   %s\n", msg);
		as_runs_tail(big)[1] = m;
		CHECK_EQ_U64(as_placer_check(pl, msg, sizeof(msg)), 0);
	}
out:
	as_placer_destroy(pl);
	free(r);
}

#ifdef AS_EXPENSIVE_CHECKS
/*
 * In an expensive-checks build every few puts and pops are followed by the
 * check, and an index it finds broken makes the finds fail from then on
 * (as_placer_error: AS_EINVAL), as a broken allocator fails its replay.
 */
static void a_broken_index_makes_finds_fail_in_an_expensive_build(void)
{
	struct as_problem pb;
	/* Fewer rectangles than the sampling's share: every change checked. */
	struct as_placer *pl = small_walk(&pb, 6, false);
	CHECK(pl != NULL);
	if (pl) {
		uint64_t o;
		as_placer_put(pl, 2, pl->off[2]);
		CHECK(!as_placer_find(pl, 3, AS_FIT_LOWEST, &o, NULL));
		CHECK_EQ_U64(as_placer_error(pl), AS_EINVAL);
	}
	as_placer_destroy(pl);
	free(pb.r);
	free(pb.times);
}
#endif

int main(void)
{
	TEST_RUN(placer_matches_the_plain_greedy);
	TEST_RUN(the_skyline_greedy_drops_as_the_plain_one_does);
	TEST_RUN(puts_on_a_thread_of_their_own_give_the_same_offsets);
	TEST_RUN(best_fit_takes_the_lowest_of_the_tightest_gaps);
	TEST_RUN(crowded_memory_is_walked_as_the_plain_greedy_does);
	TEST_RUN(popped_trials_leave_the_placer_as_before);
	TEST_RUN(sections_are_the_distinct_times_at_any_time_scale);
	TEST_RUN(a_part_on_its_own_sections_keeps_its_overlaps_loads_and_lengths);
	TEST_RUN(a_walk_stops_once_its_steps_run_out_and_takes_as_many_each_time);
	TEST_RUN(a_walk_far_behind_its_pace_stops_once_a_quarter_is_spent);
	TEST_RUN(the_check_finds_nothing_after_puts_pops_and_resets);
	TEST_RUN(the_check_finds_nothing_with_puts_on_their_own_thread);
	TEST_RUN(the_check_finds_a_rectangle_put_twice);
	TEST_RUN(the_check_finds_each_part_of_the_index_broken);
	TEST_RUN(the_check_finds_a_wrong_block_maximum);
#ifdef AS_EXPENSIVE_CHECKS
	TEST_RUN(a_broken_index_makes_finds_fail_in_an_expensive_build);
#else
	TEST_SKIP(a_broken_index_makes_finds_fail_in_an_expensive_build,
		  "needs -Dexpensive_checks=true");
#endif
	return tap_done();
}
