/*
 * The offline planners: strip (the seed's method, the exact and
 * the large-trace searches), greedy-breadth and bestfit, and the placement
 * machinery they share (place.h). Benchmarks from ../shared are replayed
 * with the heights reached so far, so they cannot silently regress.
 */
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "allocscope/build.h"
#include "strategies/place/place.h"
#include "strategies/strip/strip.h"
#include "tap.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return as_splitmix64(&rng_state);
}

/* A problem built by hand: rectangles over sections 0..S of unit length. */
struct hand {
	struct as_problem pb;
	struct as_rect r[64];
	uint64_t times[65];
};

static void hand_init(struct hand *h, uint32_t nsections)
{
	memset(h, 0, sizeof(*h));
	h->pb.r = h->r;
	h->pb.times = h->times;
	h->pb.nsections = nsections;
	for (uint32_t t = 0; t <= nsections; t++)
		h->times[t] = t;
}

static uint32_t hand_add(struct hand *h, uint32_t t0, uint32_t t1,
			 uint64_t size)
{
	uint32_t i = h->pb.n++;
	h->r[i].t0 = t0;
	h->r[i].t1 = t1;
	h->r[i].size = size;
	h->r[i].buf = i;
	return i;
}

static void hand_finish(struct hand *h)
{
	uint64_t load[65];
	as_problem_load(&h->pb, load);
	h->pb.lower_bound = 0;
	for (uint32_t t = 0; t < h->pb.nsections; t++)
		if (load[t] > h->pb.lower_bound)
			h->pb.lower_bound = load[t];
}

/* Do any two rectangles that share time share addresses? */
static bool overlapping(const struct as_problem *pb, const uint64_t *off)
{
	for (uint32_t i = 0; i < pb->n; i++)
		for (uint32_t j = i + 1; j < pb->n; j++) {
			const struct as_rect *a = &pb->r[i], *b = &pb->r[j];
			if (a->t0 < b->t1 && b->t0 < a->t1 &&
			    off[i] < off[j] + b->size &&
			    off[j] < off[i] + a->size)
				return true;
		}
	return false;
}

static struct as_trace *csv_trace(const char *text)
{
	struct as_trace *t = NULL;
	struct as_diag d;
	if (as_trace_parse("t.csv", text, strlen(text), "csv", &t, &d))
		printf("#   parse: %s\n", d.msg);
	return t;
}

/* A random timed trace (CSV): n buffers, equal sizes common. */
static struct as_trace *random_timed(uint64_t seed, uint32_t n,
				     bool malloc_like)
{
	struct as_builder *b = as_builder_create("random.csv", "csv");
	struct as_diag d;
	char name[32];
	rng_state = seed;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t start = malloc_like ? i : rnd() % (n / 2 + 1);
		uint64_t life = malloc_like
					? (rnd() % 50 == 0 ? 1 + rnd() % 20000
							   : 1 + rnd() % 80)
					: 1 + rnd() % 40;
		static const uint64_t sizes[] = {16, 32, 64, 64, 128, 256,
						 1024, 4096};
		uint64_t size = rnd() % 500 == 0 ? 65536 * (1 + rnd() % 8)
						 : sizes[rnd() % 8];
		snprintf(name, sizeof(name), "b%u", i);
		if (as_builder_add_timed(b, name, size, 1, start, start + life,
					 i + 2, &d) < 0)
			printf("#   builder: %s\n", d.msg);
	}
	struct as_trace *t = NULL;
	if (as_builder_finish(b, &t, &d))
		printf("#   finish: %s\n", d.msg);
	return t;
}

static struct as_plan *run(const char *spec, const struct as_trace *t)
{
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	if (as_strategy_run(spec, t, NULL, &p, &d) != AS_OK) {
		printf("#   %s: %s\n", spec, d.msg);
		return NULL;
	}
	return p;
}

static bool valid(const struct as_trace *t, const struct as_plan *p)
{
	struct as_report r;
	if (as_validate(t, p, &r) != AS_OK)
		return false;
	if (!r.valid) {
		char buf[512];
		printf("#   invalid: %s\n",
		       as_violation_text(t, p, &r.first[0], buf, sizeof(buf)));
	}
	return r.valid;
}

/* ---- Risk classification, groups, metrics ---- */

static void risk_is_high_above_the_threshold_and_for_what_shares_its_time(void)
{
	struct hand h;
	hand_init(&h, 10);
	uint32_t a = hand_add(&h, 0, 2, 4);  /* off 0: top 4 */
	uint32_t b = hand_add(&h, 1, 3, 4);  /* off 4: top 8 > 6, high */
	uint32_t c = hand_add(&h, 2, 4, 2);  /* off 0: shares [2,3) with b */
	uint32_t d = hand_add(&h, 5, 6, 6);  /* off 0: top 6, medium */
	uint32_t e = hand_add(&h, 5, 7, 0);  /* zero bytes, shares d's time */
	uint32_t f = hand_add(&h, 3, 5, 1);  /* off 2: shares c's time only */
	uint32_t g = hand_add(&h, 8, 9, 1);  /* alone */
	uint32_t k = hand_add(&h, 6, 8, 1);  /* shares e's time (medium) */
	hand_finish(&h);
	uint64_t off[8] = {0, 4, 0, 0, 0, 2, 0, 0};
	uint8_t risk[8];
	as_strip_classify(&h.pb, off, 6, risk);
	CHECK_EQ_U64(risk[b], AS_RISK_HIGH);
	CHECK_EQ_U64(risk[a], AS_RISK_HIGH);
	CHECK_EQ_U64(risk[c], AS_RISK_HIGH);
	CHECK_EQ_U64(risk[d], AS_RISK_MEDIUM);
	CHECK_EQ_U64(risk[e], AS_RISK_MEDIUM);
	CHECK_EQ_U64(risk[f], AS_RISK_LOW);
	CHECK_EQ_U64(risk[k], AS_RISK_LOW);
	CHECK_EQ_U64(risk[g], AS_RISK_NONE);
}

static void groups_join_rectangles_linked_by_time_overlap(void)
{
	struct hand h;
	hand_init(&h, 20);
	hand_add(&h, 0, 3, 1);   /* 0 \ chain 0-1-2 */
	hand_add(&h, 2, 5, 1);   /* 1 | */
	hand_add(&h, 4, 6, 1);   /* 2 / */
	hand_add(&h, 6, 8, 1);   /* 3: touches 2 at 6 only: a new group */
	hand_add(&h, 10, 12, 1); /* 4 */
	hand_add(&h, 11, 20, 1); /* 5 joins 4 */
	hand_finish(&h);
	uint32_t ids[6] = {5, 3, 1, 4, 0, 2}, first[7];
	int ng = as_strip_group(&h.pb, ids, 6, first);
	CHECK_EQ_U64(ng, 3);
	CHECK_EQ_U64(first[0], 0);
	CHECK_EQ_U64(first[1], 3);
	CHECK_EQ_U64(first[2], 4);
	CHECK_EQ_U64(first[3], 6);
	CHECK_EQ_U64(ids[0], 0);
	CHECK_EQ_U64(ids[3], 3);
	CHECK_EQ_U64(ids[5], 5);
}

static void every_metric_orders_and_ties_go_by_index(void)
{
	struct hand h;
	hand_init(&h, 10);
	hand_add(&h, 0, 2, 8);
	hand_add(&h, 0, 9, 2);
	hand_add(&h, 3, 5, 8);
	hand_add(&h, 1, 4, 4);
	hand_finish(&h);
	uint32_t ids[4];
	for (int m = 0; as_strip_metrics[m]; m++) {
		for (uint32_t i = 0; i < 4; i++)
			ids[i] = 3 - i;
		CHECK(as_strip_order(&h.pb, m, ids, 4) == AS_OK);
		bool seen[4] = {0};
		for (uint32_t i = 0; i < 4; i++)
			seen[ids[i]] = true;
		CHECK(seen[0] && seen[1] && seen[2] && seen[3]);
		if (strcmp(as_strip_metrics[m], "size") == 0) {
			CHECK_EQ_U64(ids[0], 0); /* size 8, lower index */
			CHECK_EQ_U64(ids[1], 2);
			CHECK_EQ_U64(ids[3], 1);
		}
		if (strcmp(as_strip_metrics[m], "length") == 0)
			CHECK_EQ_U64(ids[0], 1);
	}
}

/* ---- The placers ---- */

static void placer_finds_the_lowest_and_the_tightest_gap(void)
{
	struct hand h;
	hand_init(&h, 4);
	hand_add(&h, 0, 4, 10); /* 0 at 0 */
	hand_add(&h, 0, 4, 10); /* 1 at 30: a gap of 20 below */
	hand_add(&h, 0, 4, 10); /* 2 at 45: a gap of 5 below */
	hand_add(&h, 1, 2, 4);  /* query */
	hand_finish(&h);
	struct as_placer *pl = as_placer_create(&h.pb);
	CHECK(pl != NULL);
	if (!pl)
		return;
	as_placer_put(pl, 0, 0);
	as_placer_put(pl, 1, 30);
	as_placer_put(pl, 2, 45);
	uint64_t off = 0, gap = 0;
	CHECK(as_placer_find(pl, 3, AS_FIT_LOWEST, &off, NULL));
	CHECK_EQ_U64(off, 10);
	CHECK(as_placer_find(pl, 3, AS_FIT_BEST, &off, &gap));
	CHECK_EQ_U64(off, 40);
	CHECK_EQ_U64(gap, 5);
	as_placer_pop(pl, 2);
	CHECK(as_placer_find(pl, 3, AS_FIT_BEST, &off, &gap));
	CHECK_EQ_U64(off, 10);
	as_placer_destroy(pl);
}

static void sweep_placer_plans_are_valid_and_fixed_rectangles_stay(void)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct as_trace *t = random_timed(seed, 400, seed & 1);
		struct as_problem pb;
		CHECK(t && as_problem_init(&pb, t, 0) == AS_OK);
		if (!t)
			continue;
		uint64_t *off = calloc(pb.n, sizeof(uint64_t));
		uint8_t *fixed = calloc(pb.n, 1);
		int err = 0;
		for (int f = 0; f < 2; f++) {
			uint64_t peak = as_place_sweep(&pb, f, NULL, NULL,
						       NULL, off, &err);
			CHECK(err == AS_OK && peak >= pb.lower_bound);
			CHECK(!overlapping(&pb, off));
		}
		/* Fix the big ones where greedy put them, sweep the rest. */
		struct as_placer *pl = as_placer_create(&pb);
		uint32_t *order = calloc(pb.n, sizeof(uint32_t));
		uint32_t m = 0;
		for (uint32_t i = 0; i < pb.n; i++)
			if (pb.r[i].size >= 1024)
				order[m++] = i;
		CHECK(as_place_order(pl, order, m, AS_FIT_LOWEST, off) !=
		      UINT64_MAX);
		uint64_t keep = m ? off[order[0]] : 0;
		for (uint32_t k = 0; k < m; k++)
			fixed[order[k]] = 1;
		as_place_sweep(&pb, AS_FIT_LOWEST, fixed, pl, NULL, off, &err);
		CHECK(err == AS_OK);
		CHECK(!overlapping(&pb, off));
		if (m)
			CHECK_EQ_U64(off[order[0]], keep);
		as_placer_destroy(pl);
		free(order);
		free(off);
		free(fixed);
		as_problem_finish(&pb);
		as_trace_destroy(t);
	}
}

/* A fixed rectangle starting inside another one it shares time with. */
static void a_sweep_refuses_fixed_rectangles_that_meet(void)
{
	struct as_trace *t = csv_trace("id,lower,upper,size\na,0,10,100\n"
				       "b,2,10,101\nc,0,10,30\n");
	struct as_problem pb;
	CHECK(t && as_problem_init(&pb, t, 0) == AS_OK);
	if (!t)
		return;
	uint64_t off[3] = {0};
	uint8_t fixed[3] = {0};
	struct as_placer *pl = as_placer_create(&pb);
	CHECK(pl != NULL);
	for (uint32_t i = 0; pl && i < pb.n; i++)
		if (pb.r[i].size > 30) {
			off[i] = pb.r[i].size == 100 ? 10 : 60;
			fixed[i] = 1;
			as_placer_put(pl, i, off[i]);
		}
	int err = AS_OK;
	if (pl)
		as_place_sweep(&pb, AS_FIT_LOWEST, fixed, pl, NULL, off, &err);
	CHECK(err == AS_EINVAL);
	as_placer_destroy(pl);
	as_problem_finish(&pb);
	as_trace_destroy(t);
}

/* A gap too small for two decimals is said in bytes, not "0.00%". */
static void certificate_words_say_optimal_a_percentage_or_bytes(void)
{
	struct as_certificate c = {.bound = 26163761};
	char w[64];
	CHECK_STR(as_certificate_words(&c, 26163761, w, sizeof(w)), "optimal");
	CHECK_STR(as_certificate_words(&c, 26163768, w, sizeof(w)),
		  "<= 7 B above optimal");
	c.bound = 1000;
	CHECK_STR(as_certificate_words(&c, 1057, w, sizeof(w)),
		  "<= 5.70% above optimal");
}

/*
 * The peak repair's top swaps: t (on top) and a smaller u living through
 * t's time trade places only where the two new places stay apart, so the
 * plan is valid whatever the swap does, and lower when a swap fits.
 */
static void a_top_swap_lowers_the_peak_and_never_overlaps(void)
{
	/* t tops the stack over [1,2); u (small, [0,3)) sits below with room
	 * above it. Then the same with u's new place meeting t's. */
	static const char *const csv[2] = {
		"id,lower,upper,size\nt,1,2,10\nu,0,3,2\na,0,3,8\n",
		"id,lower,upper,size\nt,1,2,10\nu,0,3,6\n",
	};
	static const uint64_t at[2][3] = {{20, 0, 10}, {8, 0, 0}};
	for (int c = 0; c < 2; c++) {
		struct as_trace *t = csv_trace(csv[c]);
		struct as_problem pb;
		CHECK(t && as_problem_init(&pb, t, 0) == AS_OK);
		if (!t)
			continue;
		uint64_t off[3] = {0};
		for (uint32_t i = 0; i < pb.n; i++)
			off[i] = at[c][pb.r[i].buf];
		CHECK(!overlapping(&pb, off));
		uint64_t before = as_place_peak(&pb, off), best = before;
		struct as_budget budget = {0};
		struct as_strip_cfg cfg = {.budget = &budget, .seed = 1,
					   .nodes = 1000, .trace = t};
		struct as_plan *p = as_plan_create(t);
		CHECK(as_strip_window_step(&pb, off, &cfg, p,
					   as_now_ms() + 1000, 1.0,
					   &best) == AS_OK);
		CHECK(!overlapping(&pb, off));
		CHECK_EQ_U64(best, as_place_peak(&pb, off));
		CHECK(best <= before);
		double swaps = -1;
		for (uint32_t k = 0; k < p->nstats; k++)
			if (strcmp(p->stats[k].key, "top_swaps") == 0)
				swaps = p->stats[k].value;
		/* The first swaps once; the second's pair would meet. */
		CHECK(swaps == (c == 0 ? 1 : 0));
		if (c == 0) /* 22 by the swap; a window may go on to 20 */
			CHECK(best <= 22);
		as_plan_destroy(p);
		as_problem_finish(&pb);
		as_trace_destroy(t);
	}
}

/* ---- The exact search ---- */

static void exact_search_packs_the_minimalloc_example_at_capacity(void)
{
	struct as_trace *t = csv_trace("id,lower,upper,size\nb1,0,3,4\n"
				       "b2,3,9,4\nb3,0,9,4\nb4,9,21,4\n"
				       "b5,0,21,4\n");
	struct as_problem pb;
	CHECK(t && as_problem_init(&pb, t, 0) == AS_OK);
	if (!t)
		return;
	uint64_t off[5];
	struct as_exact_stats st = {0};
	CHECK_EQ_U64(pb.lower_bound, 12);
	CHECK_EQ_U64(as_exact_solve(&pb, 12, as_now_ms() + 10000, NULL, 0, 1,
				    off, &st),
		     AS_EXACT_FOUND);
	CHECK_EQ_U64(as_place_peak(&pb, off), 12);
	CHECK(!overlapping(&pb, off));
	/* Below the bound there is nothing to search. */
	CHECK_EQ_U64(as_exact_solve(&pb, 11, as_now_ms() + 10000, NULL, 0, 1,
				    off, NULL),
		     AS_EXACT_NONE);
	as_problem_finish(&pb);
	as_trace_destroy(t);
}

static void exact_search_keeps_fixed_rectangles_where_they_are(void)
{
	struct as_trace *t = csv_trace("id,lower,upper,size\nb1,0,3,4\n"
				       "b2,3,9,4\nb3,0,9,4\nb4,9,21,4\n"
				       "b5,0,21,4\n");
	struct as_problem pb;
	CHECK(t && as_problem_init(&pb, t, 0) == AS_OK);
	if (!t)
		return;
	uint64_t fixed[5], off[5];
	for (int i = 0; i < 5; i++)
		fixed[i] = AS_NO_OFFSET;
	/* b5 held at 8: the rest packs below it. */
	fixed[4] = 8;
	CHECK_EQ_U64(as_exact_solve_fixed(&pb, fixed, 12, as_now_ms() + 10000,
					  NULL, 0, 1, off, NULL),
		     AS_EXACT_FOUND);
	CHECK_EQ_U64(off[4], 8);
	CHECK(as_place_peak(&pb, off) <= 12);
	CHECK(!overlapping(&pb, off));
	/* Held at 2 it leaves 2 + 6 bytes around it: b1 and b3 need 8. */
	fixed[4] = 2;
	CHECK_EQ_U64(as_exact_solve_fixed(&pb, fixed, 12, as_now_ms() + 10000,
					  NULL, 0, 1, off, NULL),
		     AS_EXACT_NONE);
	as_problem_finish(&pb);
	as_trace_destroy(t);
}

static void exact_search_proves_alignment_leaves_no_room(void)
{
	/* Two 1-byte buffers aligned to 4 at the same time: peak 5. */
	struct hand h;
	hand_init(&h, 1);
	hand_add(&h, 0, 1, 1);
	hand_add(&h, 0, 1, 1);
	h.r[0].align_log2 = h.r[1].align_log2 = 2;
	hand_finish(&h);
	uint64_t off[2];
	CHECK_EQ_U64(h.pb.lower_bound, 2);
	CHECK_EQ_U64(as_exact_solve(&h.pb, 4, as_now_ms() + 10000, NULL, 0,
				    1, off, NULL),
		     AS_EXACT_NONE);
	CHECK_EQ_U64(as_exact_solve(&h.pb, 5, as_now_ms() + 10000, NULL, 0,
				    1, off, NULL),
		     AS_EXACT_FOUND);
	CHECK_EQ_U64(as_place_peak(&h.pb, off), 5);
}

static void exact_search_splits_independent_parts(void)
{
	/* Two halves that share no time: each packs to its own bound. */
	struct hand h;
	hand_init(&h, 8);
	hand_add(&h, 0, 2, 3);
	hand_add(&h, 1, 4, 2);
	hand_add(&h, 2, 4, 3);
	hand_add(&h, 4, 6, 5);
	hand_add(&h, 5, 8, 1);
	hand_add(&h, 4, 5, 1);
	hand_finish(&h);
	uint64_t off[6];
	CHECK_EQ_U64(as_exact_solve(&h.pb, h.pb.lower_bound,
				    as_now_ms() + 10000, NULL, 0, 1, off,
				    NULL),
		     AS_EXACT_FOUND);
	CHECK(!overlapping(&h.pb, off));
	CHECK(as_place_peak(&h.pb, off) <= h.pb.lower_bound);
}

/* ---- Strategy strip ---- */

static void strip_stops_tuning_at_a_fixed_point_or_the_threshold(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct as_trace *t = random_timed(seed * 77, 300, false);
		struct as_plan *p = t ? run("strip:search=none,rounds=1000", t)
				      : NULL;
		CHECK(p != NULL);
		if (!p) {
			as_trace_destroy(t);
			continue;
		}
		CHECK(valid(t, p));
		/* One round per order tried: far fewer than 1000. */
		CHECK(p->nrounds >= 1 && p->nrounds < 1000);
		bool stopped = false;
		for (uint32_t k = 0; k < p->nrounds; k++)
			stopped = stopped ||
				  strcmp(p->rounds[k].label, "fixed point") ==
					  0 ||
				  p->rounds[k].peak == as_trace_lower_bound(t);
		CHECK(stopped);
		/* The baselines first, then the seed's method unless done. */
		CHECK(strcmp(p->rounds[0].label, "baselines' best") == 0);
		CHECK(p->nrounds == 1 ||
		      strncmp(p->rounds[1].label, "metric=", 7) == 0);
		as_plan_destroy(p);
		as_trace_destroy(t);
	}
}

static void strip_is_deterministic_for_a_seed_and_effort(void)
{
	struct as_trace *t = random_timed(4242, 250, false);
	const char *spec = "strip:seed=7,nodes=20000,budget_ms=60000";
	struct as_plan *a = t ? run(spec, t) : NULL;
	struct as_plan *b = t ? run(spec, t) : NULL;
	CHECK(a && b);
	if (a && b) {
		CHECK(valid(t, a));
		CHECK(memcmp(a->offset, b->offset,
			     t->nbuffers * sizeof(uint64_t)) == 0);
		CHECK_EQ_U64(a->nrounds, b->nrounds);
	}
	as_plan_destroy(a);
	as_plan_destroy(b);
	as_trace_destroy(t);
}

static void strip_rejects_unknown_and_out_of_range_options(void)
{
	struct as_trace *t = csv_trace("id,lower,upper,size\na,0,2,4\n");
	static const char *const bad[] = {
		"strip:budget_ms=3600001", "strip:metric=height",
		"strip:rounds=1001",       "strip:seed=-1",
		"strip:search=fast",       "strip:big=1",
		"strip:exact_max=6001",   "strip:colour=red",
	};
	for (size_t k = 0; t && k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct as_plan *p = NULL;
		struct as_diag d = {0};
		int err = as_strategy_run(bad[k], t, NULL, &p, &d);
		CHECK(err != AS_OK && p == NULL);
		CHECK(strstr(d.msg, "strip") != NULL);
		if (err == AS_OK)
			printf("#   %s was accepted\n", bad[k]);
		as_plan_destroy(p);
	}
	as_trace_destroy(t);
}

static void strip_places_zero_sizes_aliases_and_spaces(void)
{
	/* x and y in two pools at once, z takes no room, w lives inside x. */
	const char *text =
		"{\"format\": \"allocscope-trace\", \"version\": 1,"
		" \"pools\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
		" \"events\": ["
		"{\"op\": \"alloc\", \"name\": \"x\", \"size\": 8, "
		"\"pool\": \"a\"},"
		"{\"op\": \"alloc\", \"name\": \"y\", \"size\": 8, "
		"\"pool\": \"b\"},"
		"{\"op\": \"alloc\", \"name\": \"z\", \"size\": 0, "
		"\"pool\": \"a\"},"
		"{\"op\": \"alloc\", \"name\": \"w\", \"size\": 4, "
		"\"pool\": \"a\", \"alias_of\": \"x\", "
		"\"alias_offset\": 4},"
		"{\"op\": \"free\", \"name\": \"z\"}]}";
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("s.json", text, strlen(text), "json", &t,
			     &d) == AS_OK);
	if (!t)
		printf("#   %s\n", d.msg);
	const char *specs[] = {"strip", "greedy-breadth", "bestfit"};
	for (int k = 0; t && k < 3; k++) {
		struct as_plan *p = run(specs[k], t);
		CHECK(p != NULL);
		if (!p)
			continue;
		CHECK(valid(t, p));
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			CHECK(p->offset[i] != AS_NO_OFFSET);
			if (t->buffers[i].size == 0)
				CHECK_EQ_U64(p->offset[i], 0);
		}
		/* Each pool on its own: both start at 0. */
		CHECK_EQ_U64(p->offset[0], 0);
		CHECK_EQ_U64(p->offset[1], 0);
		CHECK_EQ_U64(p->offset[3], p->offset[0] + 4);
		as_plan_destroy(p);
	}
	as_trace_destroy(t);
}

static void strip_large_mode_stays_within_half_a_percent(void)
{
	/* 150k malloc-like buffers: too many pairs for the seed's method. */
	struct as_trace *t = random_timed(99, 150000, true);
	/* Without the baselines, which may reach the bound on their own. */
	struct as_plan *p =
		t ? run("strip:budget_ms=20000,baselines=off", t) : NULL;
	CHECK(p != NULL);
	if (p) {
		uint64_t lb = as_trace_lower_bound(t);
		uint64_t peak = as_plan_peak(p, t, -1);
		printf("#   150k buffers: peak %llu, bound %llu (+%.3f%%), "
		       "%.0f ms\n",
		       (unsigned long long)peak, (unsigned long long)lb,
		       100.0 * (double)(peak - lb) / (double)lb, p->plan_ms);
		CHECK(valid(t, p));
		CHECK(peak >= lb);
		CHECK((double)peak <= (double)lb * 1.005);
		bool swept = false;
		for (uint32_t k = 0; k < p->nrounds; k++)
			swept = swept || strstr(p->rounds[k].label, "sweep");
		CHECK(swept);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static double stat_of(const struct as_plan *p, const char *key)
{
	for (uint32_t k = 0; k < p->nstats; k++)
		if (strcmp(p->stats[k].key, key) == 0)
			return p->stats[k].value;
	return -1;
}

/* Crowded lifetimes, sizes spread wide: no greedy reaches the bound. */
static struct as_trace *crowded_trace(uint32_t n)
{
	size_t cap = (size_t)n * 48 + 32, used = 0;
	char *csv = malloc(cap);
	struct as_trace *t = NULL;
	if (!csv)
		return NULL;
	rng_state = 5;
	used += (size_t)snprintf(csv, cap, "id,lower,upper,size\n");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = rnd() % 300;
		used += (size_t)snprintf(csv + used, cap - used,
					 "%u,%llu,%llu,%llu\n", i,
					 (unsigned long long)a,
					 (unsigned long long)(a + 1 + rnd() % 80),
					 (unsigned long long)(100 + rnd() % 19901));
	}
	t = csv_trace(csv);
	free(csv);
	return t;
}

/*
 * The restarts (nodes= counts n per restart) only ever lower the plan, in
 * the same order for a seed: more of them end at or below fewer, each
 * lower one is recorded as a round, and on a trace the skyline greedy
 * leaves above the bound some of them go lower.
 */
static void strip_restarts_only_lower_the_plan_and_more_go_lower(void)
{
	const uint32_t n = 1500;
	struct as_trace *t = crowded_trace(n);
	CHECK(t != NULL);
	uint64_t prev = UINT64_MAX, first = 0;
	double wins = 0;
	static const uint32_t restarts[] = {1, 8, 40};
	for (size_t k = 0; t && k < sizeof(restarts) / sizeof(*restarts);
	     k++) {
		char spec[128];
		snprintf(spec, sizeof(spec),
			 "strip:search=local,baselines=off,budget_ms=600000,"
			 "nodes=%u",
			 restarts[k] * n);
		struct as_plan *p = run(spec, t);
		CHECK(p != NULL);
		if (!p)
			break;
		uint64_t peak = as_plan_peak(p, t, -1), before = UINT64_MAX;
		uint64_t lower = 0;
		for (uint32_t r = 0; r < p->nrounds; r++) {
			bool restart =
				!strcmp(p->rounds[r].label, "skyline restart");
			lower += restart;
			if (!restart && p->rounds[r].peak < before)
				before = p->rounds[r].peak;
		}
		printf("#   %u restarts: %.0f ran, %.0f lower; peak %llu "
		       "(before them %llu, bound %llu)\n",
		       restarts[k], stat_of(p, "restarts"),
		       stat_of(p, "restart_wins"), (unsigned long long)peak,
		       (unsigned long long)before,
		       (unsigned long long)as_trace_lower_bound(t));
		CHECK(valid(t, p));
		CHECK(peak <= before);
		CHECK(peak <= prev);
		CHECK_EQ_U64((uint64_t)stat_of(p, "restarts"), restarts[k]);
		CHECK_EQ_U64((uint64_t)stat_of(p, "restart_wins"), lower);
		prev = peak;
		first = k == 0 ? before : first;
		wins = stat_of(p, "restart_wins");
		as_plan_destroy(p);
	}
	CHECK(prev < first);
	CHECK(wins >= 1);
	as_trace_destroy(t);
}

/*
 * Timed by the clock (no nodes=), the restarts borrow an idle processor
 * for a second thread: both lower the one plan, which stays valid and no
 * higher than the skyline greedy's.
 */
static void strip_restarts_run_on_an_idle_processor_too(void)
{
	struct as_trace *t = crowded_trace(1500);
	struct as_runner *r = NULL;
	struct as_runner_options o = {.jobs = 2};
	const char *spec =
		"strip:search=local,baselines=off,bound=0,budget_ms=600";
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	CHECK(t && as_runner_create(t, &o, &r) == AS_OK);
	if (t && r)
		CHECK(as_runner_run_many(r, &spec, 1, NULL, &p, &d) == AS_OK);
	CHECK(p != NULL);
	if (p) {
		uint64_t sky = UINT64_MAX;
		for (uint32_t k = 0; k < p->nrounds; k++)
			if (!strcmp(p->rounds[k].label, "skyline greedy"))
				sky = p->rounds[k].peak;
		printf("#   %.0f restarts on %.0f threads, %.0f lower\n",
		       stat_of(p, "restarts"), stat_of(p, "restart_threads"),
		       stat_of(p, "restart_wins"));
		CHECK(valid(t, p));
		CHECK(as_plan_peak(p, t, -1) <= sky);
		CHECK(stat_of(p, "restart_threads") == 2);
		CHECK(stat_of(p, "restarts") >= 2);
	}
	as_plan_destroy(p);
	as_runner_destroy(r);
	as_trace_destroy(t);
}

/*
 * budget_ms is the whole run's: on a trace with many overlapping pairs the
 * steps after the first sweep start only when they fit. Without the
 * baselines (whose time is theirs, never cut). The bound is loose (the
 * machine may be loaded); before the budget covered every step this took
 * 20x the budget.
 */
static void strip_keeps_to_its_budget_on_a_large_trace(void)
{
	struct as_trace *t = random_timed(99, 150000, true);
	struct as_plan *p =
		t ? run("strip:budget_ms=300,baselines=off", t) : NULL;
	CHECK(p != NULL);
	if (p) {
		printf("#   150k buffers, budget 300 ms: %.0f ms (first round "
		       "%.0f ms)\n",
		       p->plan_ms, p->nrounds ? p->rounds[0].ms : -1.0);
		CHECK(valid(t, p));
		CHECK(p->plan_ms < 3000);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* ---- Baselines ---- */

static void greedy_breadth_serves_the_broadest_operator_first(void)
{
	/*
	 * Time 1 is the broadest (a, b, c live: 13 bytes); its buffers go
	 * first, largest first, then d at time 3.
	 */
	struct as_trace *t = csv_trace("id,lower,upper,size\n"
				       "a,0,2,6\nb,1,3,4\nc,1,2,3\nd,3,4,20\n");
	struct as_plan *p = t ? run("greedy-breadth", t) : NULL;
	CHECK(p != NULL);
	if (p) {
		CHECK(valid(t, p));
		CHECK_EQ_U64(p->offset[0], 0);  /* a: largest at time 1 */
		CHECK_EQ_U64(p->offset[1], 6);  /* b */
		CHECK_EQ_U64(p->offset[2], 10); /* c */
		CHECK_EQ_U64(p->offset[3], 0);  /* d: alone */
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void bestfit_takes_the_tightest_gap_and_keeps_the_better_order(void)
{
	struct as_trace *t = csv_trace("id,lower,upper,size\n"
				       "big,0,10,8\nlong,0,10,2\n"
				       "mid,2,4,5\nsmall,5,6,2\n");
	struct as_plan *p = t ? run("bestfit", t) : NULL;
	CHECK(p != NULL);
	if (p) {
		CHECK(valid(t, p));
		CHECK_EQ_U64(p->nrounds, 2);
		uint64_t a = p->rounds[0].peak, b = p->rounds[1].peak;
		CHECK_EQ_U64(as_plan_peak(p, t, -1), a < b ? a : b);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* ---- Every strategy on every benchmark, with the heights reached ---- */

struct expect {
	const char *file;
	uint64_t breadth, bestfit, strip; /* heights reached (strip: at most) */
	const char *strip_spec;
};

/*
 * strip runs with a node budget so the figures do not depend on the
 * machine (the wall-clock budget is only a safety net here).
 */
#define STRIP_SPEC "strip:budget_ms=60000,nodes=1000000"
/* Where the bound is out of reach, the effort is all spent: keep it short. */
#define STRIP_SHORT "strip:budget_ms=60000,nodes=250000"
static const struct expect expected[] = {
	{"minimalloc/A.1048576.csv", 1611776, 1374208, 1048576, STRIP_SPEC},
	{"minimalloc/B.1048576.csv", 1681408, 1412096, 1048576, STRIP_SPEC},
	{"minimalloc/C.1048576.csv", 1752064, 1417216, 1039360, STRIP_SPEC},
	{"minimalloc/D.1048576.csv", 1511424, 1304576, 1042432, STRIP_SHORT},
	{"minimalloc/E.1048576.csv", 1759232, 1469440, 1048576, STRIP_SPEC},
	{"minimalloc/F.1048576.csv", 1436672, 1433600, 1048576, STRIP_SPEC},
	{"minimalloc/G.1048576.csv", 1291264, 1428480, 1048576, STRIP_SPEC},
	{"minimalloc/H.1048576.csv", 1293312, 1405952, 1048576, STRIP_SPEC},
	{"minimalloc/I.1048576.csv", 1752064, 1478656, 1048576, STRIP_SPEC},
	{"minimalloc/J.1048576.csv", 1471488, 1333248, 1043456, STRIP_SHORT},
	{"minimalloc/K.1048576.csv", 2472960, 1397760, 1048576, STRIP_SPEC},
	{"minimalloc/input.12.csv", 12, 12, 12, STRIP_SPEC},
	{"idealloc/G_1.csv", 3030937746ULL, 3041655938ULL, 3030937746ULL,
	 STRIP_SPEC},
	{"idealloc/resnet50.csv", 1524909740ULL, 1522216620ULL, 1515472556ULL,
	 STRIP_SPEC},
};

static void every_strategy_plans_every_benchmark_at_its_recorded_height(void)
{
	const char *shared = tap_shared_dir();
	for (size_t k = 0; k < sizeof(expected) / sizeof(expected[0]); k++) {
		const struct expect *e = &expected[k];
		char path[1024];
		struct as_trace *t;
		struct as_diag d;
		snprintf(path, sizeof(path), "%s/benchmarks/%s", shared,
			 e->file);
		if (as_trace_load(path, NULL, &t, &d) != AS_OK) {
			printf("#   %s\n", d.msg);
			tap_cur_failed = 1;
			continue;
		}
		uint64_t lb = as_trace_lower_bound(t);
		for (size_t s = 0; s < as_strategy_count(); s++) {
			const char *name = as_strategy_at(s)->name;
			if (!as_strategy_applies(name, t))
				continue;
			bool is_strip = strcmp(name, "strip") == 0;
			struct as_plan *p = run(is_strip ? e->strip_spec : name,
						t);
			CHECK(p != NULL);
			if (!p)
				continue;
			uint64_t peak = as_plan_peak(p, t, -1);
			/*
			 * The bound holds for plans that place everything in
			 * the trace's own spaces (others may fail buffers or
			 * spread them over several levels).
			 */
			bool bounded = as_plan_failed(p, t) == 0 && !p->space;
			if (!valid(t, p) || (bounded && peak < lb)) {
				printf("#   %s on %s: peak %llu, bound %llu\n",
				       name, e->file, (unsigned long long)peak,
				       (unsigned long long)lb);
				tap_cur_failed = 1;
			}
			uint64_t want = 0;
			if (strcmp(name, "greedy-breadth") == 0)
				want = e->breadth;
			else if (strcmp(name, "bestfit") == 0)
				want = e->bestfit;
			else if (is_strip)
				want = e->strip;
			if (want && (is_strip ? peak > want : peak != want)) {
				printf("#   %s on %s: height %llu, recorded "
				       "%llu\n",
				       name, e->file, (unsigned long long)peak,
				       (unsigned long long)want);
				tap_cur_failed = 1;
			}
			as_plan_destroy(p);
		}
		as_trace_destroy(t);
	}
}

/*
 * The placer answers from per-node unions until a pop makes them stale,
 * then from the runs one by one: both must give the same offsets.
 */
static void placer_unions_and_runs_give_the_same_offsets(void)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct as_trace *t = random_timed(seed, 3000, seed & 1);
		struct as_problem pb;
		CHECK(t && as_problem_init(&pb, t, 0) == AS_OK);
		if (!t)
			continue;
		struct as_placer *a = as_placer_create(&pb);
		struct as_placer *b = as_placer_create(&pb);
		uint32_t *order = calloc(pb.n, sizeof(uint32_t));
		uint64_t *oa = calloc(pb.n, sizeof(uint64_t));
		CHECK(a && b && order && oa &&
		      as_order_bestfit(&pb, false, order) == AS_OK);
		for (int fit = 0; fit < 2 && a && b && order && oa; fit++) {
			enum as_fit f = fit ? AS_FIT_BEST : AS_FIT_LOWEST;
			CHECK(as_place_order(a, order, pb.n, f, oa) !=
			      UINT64_MAX);
			/* b: fill, empty again by pops (stale), refill. */
			as_placer_reset(b);
			for (uint32_t j = 0; j < pb.n; j++)
				as_placer_put(b, order[j], oa[order[j]]);
			for (uint32_t j = pb.n; j-- > 0;)
				as_placer_pop(b, order[j]);
			uint32_t same = 0;
			for (uint32_t j = 0; j < pb.n; j++) {
				uint64_t o = 0;
				if (as_placer_find(b, order[j], f, &o, NULL))
					as_placer_put(b, order[j], o);
				same += o == oa[order[j]];
			}
			CHECK_EQ_U64(same, pb.n);
		}
		as_placer_destroy(a);
		as_placer_destroy(b);
		free(order);
		free(oa);
		as_problem_finish(&pb);
		as_trace_destroy(t);
	}
}

/*
 * strip starts from the baselines' best plan: it is never behind them.
 * With a budget they all fit in (a slow sanitizer build too), and no
 * search after them, so the check does not depend on the machine's pace.
 */
static void strip_is_never_behind_the_baselines(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct as_trace *t = random_timed(seed, 2000 + 500 * seed,
						  seed & 1);
		const char *specs[] = {"greedy-size", "bestfit",
				       "greedy-breadth"};
		uint64_t best = UINT64_MAX;
		for (int k = 0; k < 3 && t; k++) {
			struct as_plan *p = run(specs[k], t);
			CHECK(p != NULL);
			if (p && as_plan_peak(p, t, -1) < best)
				best = as_plan_peak(p, t, -1);
			as_plan_destroy(p);
		}
		struct as_plan *p =
			t ? run("strip:budget_ms=600000,search=none,bound=0,"
				"nodes=1,rounds=0",
				t)
			  : NULL;
		CHECK(p && valid(t, p) && as_plan_peak(p, t, -1) <= best);
		if (p && as_plan_peak(p, t, -1) > best)
			printf("#   seed %llu: strip %llu, best baseline %llu\n",
			       (unsigned long long)seed,
			       (unsigned long long)as_plan_peak(p, t, -1),
			       (unsigned long long)best);
		as_plan_destroy(p);
		as_trace_destroy(t);
	}
}

/* ---- Certified bounds ---- */

/*
 * Seven buffers whose optimum (10) is above their load (9): found by
 * tests/cert_check.py --find 7 1, which also proves the optimum by brute
 * force.
 */
static const char above_load_csv[] = "id,lower,upper,size\n"
				     "0,1,2,4\n1,4,6,5\n2,3,5,2\n3,2,5,2\n"
				     "4,2,4,2\n5,0,3,5\n6,5,7,3\n";

static void strip_certifies_a_bound_above_the_load_and_it_re_solves(void)
{
	struct as_trace *t = csv_trace(above_load_csv);
	struct as_plan *p = t ? run("strip", t) : NULL;
	CHECK(p && p->ncerts == 1);
	if (p && p->ncerts == 1) {
		struct as_certificate *c = &p->certs[0];
		CHECK_EQ_U64(c->load, 9);
		CHECK_EQ_U64(c->bound, 10);
		CHECK_EQ_U64(as_plan_peak(p, t, -1), 10); /* optimal */
		CHECK(c->nbuffers > 0 && c->nbuffers <= 7);
		struct as_diag d;
		CHECK(as_certificate_fits(t, c, &d) == AS_OK);
		CHECK(as_certificate_verify(c, 10000, 0, NULL) == 1);
		/* One byte more is not proven: a placement of 10 exists. */
		c->bound = 11;
		CHECK(as_certificate_verify(c, 10000, 0, NULL) == 0);
		c->bound = 10;
		/* A buffer that is larger in the certificate than in the
		 * trace is no relaxation. */
		c->buffers[0].size++;
		CHECK(as_certificate_fits(t, c, &d) == AS_EINVAL);
		c->buffers[0].size--;
		c->buffers[0].end++;
		CHECK(as_certificate_fits(t, c, &d) == AS_EINVAL);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void strip_certifies_the_whole_space_its_exact_search_refuted(void)
{
	/*
	 * bound=0: no window search; the seed's exact search on the whole
	 * space refutes 9, so the whole space is the certificate. Without
	 * the exact search (search=local) the load stands alone.
	 */
	struct as_trace *t = csv_trace(above_load_csv);
	struct as_plan *p = t ? run("strip:bound=0", t) : NULL;
	struct as_plan *q = t ? run("strip:bound=0,search=local", t) : NULL;
	CHECK(p && p->ncerts == 1 && q && q->ncerts == 1);
	if (p && p->ncerts == 1) {
		CHECK_EQ_U64(p->certs[0].bound, 10);
		CHECK_EQ_U64(p->certs[0].nbuffers, 7);
		CHECK(as_certificate_verify(&p->certs[0], 10000, 0, NULL) == 1);
	}
	if (q && q->ncerts == 1) {
		CHECK_EQ_U64(q->certs[0].bound, 9);
		CHECK_EQ_U64(q->certs[0].nbuffers, 0);
	}
	as_plan_destroy(p);
	as_plan_destroy(q);
	as_trace_destroy(t);
}

/*
 * Every certified bound of strip on random small traces is at most the
 * brute-force optimum (every order dropped onto a skyline, each buffer at
 * the lowest aligned offset), and every plan at least the bound.
 */
static uint64_t drop_best(const struct as_cert_buffer *b, uint32_t n,
			  uint32_t used, uint64_t *off, uint64_t best)
{
	if (used == (1u << n) - 1) {
		uint64_t top = 0;
		for (uint32_t i = 0; i < n; i++)
			if (off[i] + b[i].size > top)
				top = off[i] + b[i].size;
		return top < best ? top : best;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (used >> i & 1)
			continue;
		uint64_t floor = 0;
		for (uint32_t j = 0; j < n; j++)
			if ((used >> j & 1) && b[j].start < b[i].end &&
			    b[i].start < b[j].end && off[j] + b[j].size > floor)
				floor = off[j] + b[j].size;
		uint64_t a = (uint64_t)1 << b[i].align_log2;
		floor = (floor + a - 1) / a * a;
		if (floor + b[i].size >= best)
			continue;
		off[i] = floor;
		best = drop_best(b, n, used | 1u << i, off, best);
	}
	return best;
}

static void certified_bounds_never_pass_the_brute_force_optimum(void)
{
	rng_state = 46;
	uint32_t above = 0;
	/* Optima above the load are rare: strip runs on those and every
	 * 20th. */
	for (int trial = 0; trial < 400; trial++) {
		char text[512] = "id,lower,upper,size\n";
		struct as_cert_buffer b[7];
		uint32_t n = 7;
		/*
		 * Neighbours of the seven buffers above: two changes each (a
		 * size, a start or an end moved by one), so many keep an
		 * optimum above their load.
		 */
		static const uint64_t base[7][3] = {{1, 2, 4}, {4, 6, 5},
						    {3, 5, 2}, {2, 5, 2},
						    {2, 4, 2}, {0, 3, 5},
						    {5, 7, 3}};
		for (uint32_t i = 0; i < n; i++) {
			b[i].id = i;
			b[i].align_log2 = 0;
			b[i].start = base[i][0];
			b[i].end = base[i][1];
			b[i].size = base[i][2];
		}
		for (int m = 0; m < 2; m++) {
			struct as_cert_buffer *x = &b[rnd() % n];
			uint64_t up = rnd() % 2;
			switch (rnd() % 3) {
			case 0:
				x->size = up ? x->size + 1
					     : x->size > 1 ? x->size - 1 : 1;
				break;
			case 1:
				if (up ? x->start + 1 < x->end : x->start > 0)
					x->start = up ? x->start + 1
						      : x->start - 1;
				break;
			default:
				if (up || x->end > x->start + 1)
					x->end = up ? x->end + 1 : x->end - 1;
				break;
			}
		}
		for (uint32_t i = 0; i < n; i++) {
			size_t len = strlen(text);
			snprintf(text + len, sizeof(text) - len,
				 "%u,%llu,%llu,%llu\n", i,
				 (unsigned long long)b[i].start,
				 (unsigned long long)b[i].end,
				 (unsigned long long)b[i].size);
		}
		uint64_t off[7];
		uint64_t opt = drop_best(b, n, 0, off, UINT64_MAX);
		/*
		 * The exact search's verdicts agree with the brute force: no
		 * placement below the optimum, one at it.
		 */
		struct as_certificate whole = {.bound = opt, .nbuffers = n,
					       .buffers = b};
		CHECK(as_certificate_verify(&whole, 10000, 0, NULL) == 1);
		whole.bound = opt + 1;
		CHECK(as_certificate_verify(&whole, 10000, 0, NULL) == 0);
		uint64_t load = 0;
		for (uint64_t at = 0; at < 9; at++) {
			uint64_t l = 0;
			for (uint32_t i = 0; i < n; i++)
				l += b[i].start <= at && at < b[i].end
					     ? b[i].size
					     : 0;
			load = l > load ? l : load;
		}
		if (opt == load && trial % 20)
			continue;
		struct as_trace *t = csv_trace(text);
		struct as_plan *p = t ? run("strip", t) : NULL;
		CHECK(p && p->ncerts == 1);
		if (!p || p->ncerts != 1) {
			as_plan_destroy(p);
			as_trace_destroy(t);
			continue;
		}
		const struct as_certificate *c = &p->certs[0];
		CHECK(c->bound <= opt);
		CHECK(as_plan_peak(p, t, -1) >= c->bound);
		if (c->bound > opt)
			printf("#   trial %d: bound %llu > optimum %llu\n",
			       trial, (unsigned long long)c->bound,
			       (unsigned long long)opt);
		above += c->bound > c->load;
		as_plan_destroy(p);
		as_trace_destroy(t);
	}
	printf("#   %u bounds above the load in 400 traces\n", above);
	CHECK(above > 0);
}

/* The padded load of buffers live at one instant, by its formula. */
static uint64_t padded_height(const struct as_cert_buffer *b, uint32_t n)
{
	uint8_t a = 62;
	for (uint32_t i = 0; i < n; i++)
		a = b[i].align_log2 < a ? b[i].align_log2 : a;
	uint64_t g = (uint64_t)1 << a, sum = 0, pad = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t up = (b[i].size + g - 1) / g * g;
		sum += up;
		pad = up - b[i].size > pad ? up - b[i].size : pad;
	}
	return sum - pad;
}

/*
 * Random small problems with alignments 1 to 8: the padded load is at
 * least the load and at most the brute-force optimum, its one-section
 * certificate re-solves, and on one instant with one alignment it is the
 * optimum.
 */
static void the_padded_load_bound_never_passes_the_brute_force_optimum(void)
{
	rng_state = 4646;
	uint32_t above = 0, exact = 0;
	for (int trial = 0; trial < 300; trial++) {
		struct hand h;
		struct as_cert_buffer b[7];
		uint32_t n = 2 + rnd() % 6, S = 1 + rnd() % 5;
		bool one_align = trial % 3 == 0;
		uint8_t a0 = rnd() % 4;
		hand_init(&h, S);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t t0 = rnd() % S;
			uint32_t t1 = t0 + 1 + rnd() % (S - t0);
			hand_add(&h, t0, t1, 1 + rnd() % 20);
			h.r[i].align_log2 = one_align ? a0 : rnd() % 4;
			b[i] = (struct as_cert_buffer){
				.id = i, .size = h.r[i].size, .start = t0,
				.end = t1, .align_log2 = h.r[i].align_log2};
		}
		hand_finish(&h);
		uint64_t off[7];
		uint64_t opt = drop_best(b, n, 0, off, UINT64_MAX);
		struct as_strip_bound_out bo = {.bound = h.pb.lower_bound};
		CHECK(as_strip_padded(&h.pb, &bo) == AS_OK);
		CHECK(bo.bound >= h.pb.lower_bound);
		CHECK(bo.bound <= opt);
		if (bo.bound > opt)
			printf("#   trial %d: padded %llu > optimum %llu\n",
			       trial, (unsigned long long)bo.bound,
			       (unsigned long long)opt);
		if (bo.bound > h.pb.lower_bound) {
			struct as_certificate c = {0};
			above++;
			CHECK(bo.wb == bo.wa + 1);
			CHECK(as_strip_certificate(&h.pb, bo.wa, bo.wb, bo.bound,
						   0, &c) == AS_OK);
			CHECK(as_certificate_verify(&c, 10000, 0, NULL) == 1);
			free(c.buffers);
		}
		/* Every buffer live at section 0 with one alignment. */
		bool clique = one_align;
		for (uint32_t i = 0; i < n; i++)
			clique &= h.r[i].t0 == 0;
		if (clique) {
			exact++;
			CHECK_EQ_U64(bo.bound, opt);
		}
	}
	printf("#   %u of 300 padded loads above the load, %u cliques at "
	       "their optimum\n", above, exact);
	CHECK(above > 0 && exact > 0);
}

/*
 * Twelve buffers of odd sizes, aligned to 16, all live at one instant:
 * strip plans them at their padded load, certifies that height with the
 * buffers live there, and the verifier proves it without a search (no
 * nodes) and refutes one byte more (a placement at the padded load is the
 * optimum).
 */
static void an_aligned_clique_is_certified_at_its_padded_height(void)
{
	struct as_builder *bl = as_builder_create("clique.csv", "csv");
	struct as_cert_buffer b[12];
	struct as_diag d;
	char name[16];
	for (uint32_t i = 0; i < 12; i++) {
		b[i] = (struct as_cert_buffer){.size = 3 + 7 * i,
					       .align_log2 = 4};
		snprintf(name, sizeof(name), "b%u", i);
		as_builder_add_timed(bl, name, b[i].size, 16, i % 3,
				     6 + i % 4, i + 2, &d);
	}
	struct as_trace *t = NULL;
	CHECK(as_builder_finish(bl, &t, &d) == AS_OK);
	uint64_t padded = padded_height(b, 12);
	struct as_plan *p = t ? run("strip", t) : NULL;
	CHECK(p && p->ncerts == 1);
	if (p && p->ncerts == 1) {
		struct as_certificate *c = &p->certs[0];
		uint64_t nodes = 1;
		printf("#   load %llu, padded %llu, plan %llu\n",
		       (unsigned long long)c->load,
		       (unsigned long long)padded,
		       (unsigned long long)as_plan_peak(p, t, -1));
		CHECK(padded > c->load);
		CHECK_EQ_U64(c->bound, padded);
		CHECK_EQ_U64(as_plan_peak(p, t, -1), padded);
		CHECK_EQ_U64(c->nbuffers, 12);
		CHECK(as_certificate_fits(t, c, &d) == AS_OK);
		CHECK(as_certificate_verify(c, 10000, 0, &nodes) == 1);
		CHECK_EQ_U64(nodes, 0);
		c->bound++;
		CHECK(as_certificate_verify(c, 10000, 0, &nodes) == 0);
		CHECK_EQ_U64(nodes, 0);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * Two 8-byte buffers aligned to 16 and one byte aligned to 1, at one
 * instant: the padded load (at alignment 1) is 17, but the optimum is 24
 * (one of the two starts at 16 or above), which the exact search proves.
 */
static void a_clique_of_mixed_alignments_goes_to_the_exact_search(void)
{
	struct as_cert_buffer b[3] = {
		{.id = 0, .size = 8, .start = 0, .end = 2, .align_log2 = 4},
		{.id = 1, .size = 8, .start = 0, .end = 2, .align_log2 = 4},
		{.id = 2, .size = 1, .start = 1, .end = 3, .align_log2 = 0}};
	struct as_certificate c = {.bound = 24, .nbuffers = 3, .buffers = b};
	uint64_t nodes = 0;
	CHECK_EQ_U64(padded_height(b, 3), 17);
	CHECK(as_certificate_verify(&c, 10000, 0, &nodes) == 1);
	CHECK(nodes > 0);
	c.bound = 25;
	CHECK(as_certificate_verify(&c, 10000, 0, NULL) == 0);
}

static void strip_skips_a_baseline_whose_cost_would_not_fit_its_budget(void)
{
	/* 150k buffers: greedy-size is guessed at 3.75 s, over 200 ms. */
	struct as_trace *t = random_timed(99, 150000, true);
	struct as_plan *p = t ? run("strip:budget_ms=300", t) : NULL;
	CHECK(p != NULL);
	if (p) {
		bool said = false;
		for (uint32_t k = 0; k < p->nrounds; k++)
			said |= strncmp(p->rounds[k].label,
					"greedy-size skipped", 19) == 0;
		CHECK(said);
		printf("#   150k buffers, budget 300 ms: %.0f ms\n",
		       p->plan_ms);
		CHECK(valid(t, p));
		CHECK(p->plan_ms < 3000);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * A trace too large for greedy-size in the budget: the round says it was
 * skipped, and strip starts from greedy-size's own largest buffers with the
 * sweep fitting the rest around them (round "greedy-size big, sweep"), not
 * from the plain sweep, and its plan is never above that start's.
 */
static void a_skipped_greedy_size_gives_way_to_its_big_ones_and_the_sweep(void)
{
	struct as_trace *t = random_timed(99, 150000, true);
	struct as_plan *p = t ? run("strip:budget_ms=300", t) : NULL;
	struct as_plan *g = t ? run("greedy-size", t) : NULL;
	CHECK(p != NULL && g != NULL);
	if (p && g) {
		int skipped = -1, big = -1, plain = -1;
		uint64_t start = 0;
		for (uint32_t k = 0; k < p->nrounds; k++) {
			const char *l = p->rounds[k].label;
			if (strncmp(l, "greedy-size skipped", 19) == 0)
				skipped = (int)k;
			if (strcmp(l, "greedy-size big, sweep") == 0) {
				big = (int)k;
				start = p->rounds[k].peak;
			}
			if (strncmp(l, "sweep ", 6) == 0)
				plain = (int)k;
		}
		uint64_t peak = as_plan_peak(p, t, -1);
		printf("#   150k buffers, budget 300 ms: start %llu, plan %llu, "
		       "greedy-size %llu, bound %llu\n",
		       (unsigned long long)start, (unsigned long long)peak,
		       (unsigned long long)as_plan_peak(g, t, -1),
		       (unsigned long long)as_trace_lower_bound(t));
		CHECK(skipped >= 0 && big > skipped);
		CHECK(plain < 0);
		CHECK(valid(t, p));
		CHECK(peak <= start);
	}
	as_plan_destroy(p);
	as_plan_destroy(g);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(risk_is_high_above_the_threshold_and_for_what_shares_its_time);
	TEST_RUN(groups_join_rectangles_linked_by_time_overlap);
	TEST_RUN(every_metric_orders_and_ties_go_by_index);
	TEST_RUN(placer_finds_the_lowest_and_the_tightest_gap);
	TEST_RUN(sweep_placer_plans_are_valid_and_fixed_rectangles_stay);
	TEST_RUN(a_sweep_refuses_fixed_rectangles_that_meet);
	TEST_RUN(certificate_words_say_optimal_a_percentage_or_bytes);
	TEST_RUN(a_top_swap_lowers_the_peak_and_never_overlaps);
	TEST_RUN(exact_search_packs_the_minimalloc_example_at_capacity);
	TEST_RUN(exact_search_keeps_fixed_rectangles_where_they_are);
	TEST_RUN(exact_search_proves_alignment_leaves_no_room);
	TEST_RUN(exact_search_splits_independent_parts);
	TEST_RUN(strip_stops_tuning_at_a_fixed_point_or_the_threshold);
	TEST_RUN(strip_is_deterministic_for_a_seed_and_effort);
	TEST_RUN(strip_restarts_only_lower_the_plan_and_more_go_lower);
	TEST_RUN(strip_restarts_run_on_an_idle_processor_too);
	TEST_RUN(strip_rejects_unknown_and_out_of_range_options);
	TEST_RUN(strip_places_zero_sizes_aliases_and_spaces);
	TEST_RUN(strip_large_mode_stays_within_half_a_percent);
	TEST_RUN(strip_keeps_to_its_budget_on_a_large_trace);
	TEST_RUN(greedy_breadth_serves_the_broadest_operator_first);
	TEST_RUN(bestfit_takes_the_tightest_gap_and_keeps_the_better_order);
	TEST_RUN(placer_unions_and_runs_give_the_same_offsets);
	TEST_RUN(strip_is_never_behind_the_baselines);
	TEST_RUN(strip_certifies_a_bound_above_the_load_and_it_re_solves);
	TEST_RUN(strip_certifies_the_whole_space_its_exact_search_refuted);
	TEST_RUN(certified_bounds_never_pass_the_brute_force_optimum);
	TEST_RUN(the_padded_load_bound_never_passes_the_brute_force_optimum);
	TEST_RUN(an_aligned_clique_is_certified_at_its_padded_height);
	TEST_RUN(a_clique_of_mixed_alignments_goes_to_the_exact_search);
	TEST_RUN(strip_skips_a_baseline_whose_cost_would_not_fit_its_budget);
	TEST_RUN(a_skipped_greedy_size_gives_way_to_its_big_ones_and_the_sweep);
	if (tap_shared_dir())
		TEST_RUN(every_strategy_plans_every_benchmark_at_its_recorded_height);
	else
		TEST_SKIP(every_strategy_plans_every_benchmark_at_its_recorded_height,
			  "../shared is absent (AS_SHARED_DIR)");
	return tap_done();
}
