/*
 * The contract every registered strategy keeps: on any trace it applies to,
 * its plan validates, and with no failed allocation its peak is at least the
 * lower bound. Random traces are seeded; the seed is printed.
 */
#include <dirent.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "allocscope/build.h"
#include "helpers.h"
#include "strategies/place/place.h"
#include "strategies/strategy.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return test_rand(&rng_state);
}

/* A random ops trace: n allocations, frees interleaved, some cases. */
static struct as_trace *random_trace(uint64_t seed, uint32_t n, bool cases)
{
	struct as_builder *b = as_builder_create("random", "ops");
	struct as_diag d;
	uint32_t *live = malloc(n * sizeof(*live)), nlive = 0;
	char name[32];
	rng_state = seed;
	for (uint32_t i = 0; i < n; i++) {
		if (cases && i > 0 && rnd() % 97 == 0) {
			as_builder_case(b, "", &d);
			nlive = 0;
		}
		while (nlive && rnd() % 3 == 0) {
			uint32_t k = (uint32_t)(rnd() % nlive);
			snprintf(name, sizeof(name), "t%u", live[k]);
			as_builder_free(b, name, 0, &d);
			live[k] = live[--nlive];
		}
		uint64_t size = rnd() % 8 == 0 ? rnd() % 64
			      : rnd() % 4 == 0 ? 256 * (1 + rnd() % 64)
					       : 1 + rnd() % 100000;
		uint64_t align = (uint64_t)1 << (rnd() % 13);
		snprintf(name, sizeof(name), "t%u", i);
		if (as_builder_alloc(b, name, size, align, 0, &d) < 0)
			printf("# builder: %s\n", d.msg);
		live[nlive++] = i;
	}
	free(live);
	struct as_trace *t = NULL;
	if (as_builder_finish(b, &t, &d) != AS_OK)
		printf("# finish: %s\n", d.msg);
	return t;
}

/* Run every applicable strategy; count the contract's breaches. */
static void conform(const struct as_trace *t, const char *what)
{
	uint64_t lb = as_trace_lower_bound(t);
	for (size_t s = 0; s < as_strategy_count(); s++) {
		const char *name = as_strategy_at(s)->name;
		if (!as_strategy_applies(name, t))
			continue;
		struct as_plan *p = NULL;
		struct as_diag d = {0};
		struct as_report r;
		/* Searches under a time budget get a short one here: the
		 * contract does not depend on how long they search. */
		char spec[96];
		snprintf(spec, sizeof(spec), "%s", name);
		for (const struct as_option_desc *o = as_strategy_at(s)->options;
		     o && o->key; o++)
			if (strcmp(o->key, "budget_ms") == 0)
				snprintf(spec, sizeof(spec), "%s:budget_ms=50",
					 name);
		if (as_strategy_run(spec, t, NULL, &p, &d) != AS_OK) {
			printf("#   %s on %s: %s\n", name, what, d.msg);
			tap_cur_failed = 1;
			continue;
		}
		CHECK(as_validate(t, p, &r) == AS_OK);
		if (!r.valid) {
			char buf[512];
			printf("#   %s on %s: invalid: %s\n", name, what,
			       as_violation_text(t, p, &r.first[0], buf,
						 sizeof(buf)));
			tap_cur_failed = 1;
		}
		uint64_t peak = as_plan_peak(p, t, -1);
		/*
		 * A plan that places buffers inside others by its own choice
		 * (in-place reuse, shared address symbols) may go below a
		 * bound that counts every buffer apart.
		 */
		bool own_aliases = false;
		for (uint32_t i = 0; p->alias_of && i < t->nbuffers; i++)
			own_aliases |= p->alias_of[i] != t->buffers[i].alias_of;
		if (as_plan_failed(p, t) == 0 && !own_aliases && peak < lb) {
			printf("#   %s on %s: peak %llu below the lower bound "
			       "%llu\n",
			       name, what, (unsigned long long)peak,
			       (unsigned long long)lb);
			tap_cur_failed = 1;
		}
		as_plan_destroy(p);
	}
}

/* as_runner_run_many on a runner of its own with options o (NULL: none)
 * and `jobs`. */
static int run_many(const struct as_trace *t, const char *const *specs,
		    size_t n, const struct as_runner_options *o,
		    const struct as_many_hooks *mh, unsigned jobs,
		    struct as_plan **out, struct as_diag *d)
{
	struct as_runner_options ro = o ? *o : (struct as_runner_options){0};
	struct as_runner *r = NULL;
	ro.jobs = jobs;
	int err = as_runner_create(t, &ro, &r);
	if (err == AS_OK)
		err = as_runner_run_many(r, specs, n, mh, out, d);
	as_runner_destroy(r);
	return err;
}

static void every_strategy_plans_random_traces_validly_above_the_bound(void)
{
	uint64_t base = getenv("AS_SEED") ? strtoull(getenv("AS_SEED"), 0, 10)
					  : 20261121;
	printf("# seed %llu (set AS_SEED to replay)\n",
	       (unsigned long long)base);
	for (uint64_t k = 0; k < 30; k++) {
		struct as_trace *t =
			random_trace(base + k, 50 + (uint32_t)(k * 37), k & 1);
		char what[64];
		snprintf(what, sizeof(what), "random trace seed %llu",
			 (unsigned long long)(base + k));
		CHECK(t != NULL);
		if (t)
			conform(t, what);
		as_trace_destroy(t);
	}
}

static void every_strategy_plans_every_bundled_trace(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/traces", src ? src : ".");
	DIR *dp = opendir(dir);
	CHECK(dp != NULL);
	if (!dp)
		return;
	struct dirent *e;
	int n = 0;
	while ((e = readdir(dp))) {
		if (e->d_name[0] == '.')
			continue;
		char path[2048];
		struct as_trace *t;
		struct as_diag d;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (as_trace_load(path, NULL, &t, &d) != AS_OK) {
			printf("#   %s: %s\n", path, d.msg);
			tap_cur_failed = 1;
			continue;
		}
		conform(t, e->d_name);
		as_trace_destroy(t);
		n++;
	}
	closedir(dp);
	CHECK(n > 0);
}

static void every_strategy_plans_the_minimalloc_benchmarks(void)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/benchmarks/minimalloc",
		 tap_shared_dir());
	DIR *dp = opendir(dir);
	CHECK(dp != NULL);
	if (!dp)
		return;
	struct dirent *e;
	int n = 0;
	while ((e = readdir(dp))) {
		if (!strstr(e->d_name, ".csv"))
			continue;
		n++;
		char path[2048];
		struct as_trace *t;
		struct as_diag d;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
		conform(t, e->d_name);
		as_trace_destroy(t);
	}
	closedir(dp);
	CHECK_EQ_U64(n, 12); /* the 11 challenging instances and input.12 */
}

static void greedy_size_places_largest_first_at_the_lowest_fit(void)
{
	const char *text = "alloc a 10 1\nalloc b 30 1\nfree a\nalloc c 20 1\n"
			   "free b\nfree c\n";
	struct as_trace *t;
	struct as_plan *p;
	struct as_diag d;
	CHECK(as_trace_parse("g.ops", text, strlen(text), "ops", &t,
			     &d) == AS_OK);
	CHECK(as_strategy_run("greedy-size", t, NULL, &p, &d) == AS_OK);
	CHECK_EQ_U64(p->offset[1], 0);  /* b, the largest */
	CHECK_EQ_U64(p->offset[2], 30); /* c shares time with b */
	CHECK_EQ_U64(p->offset[0], 30); /* a: below c in time, above b */
	CHECK_EQ_U64(as_plan_peak(p, t, -1), 50);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void greedy_size_honours_alignment(void)
{
	const char *text = "alloc a 3 1\nalloc b 2 64\n";
	struct as_trace *t;
	struct as_plan *p;
	struct as_diag d;
	CHECK(as_trace_parse("g.ops", text, strlen(text), "ops", &t,
			     &d) == AS_OK);
	CHECK(as_strategy_run("greedy-size", t, NULL, &p, &d) == AS_OK);
	CHECK_EQ_U64(p->offset[0], 0);
	CHECK_EQ_U64(p->offset[1], 64);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * One rule past 2^64 bytes for every strategy (docs/strategies.md): a trace
 * with more live at once is refused at load, at the allocation that passes
 * it; what still cannot be placed below 2^64 (alignment, fragmentation,
 * spaces a strategy makes) fails as allocations, and the plan's peak never
 * saturates.
 */
static void every_strategy_follows_one_rule_past_2_64_bytes(void)
{
	static const struct {
		const char *what, *text;
		uint64_t line; /* refused at load on this line; 0: loads */
	} cases[] = {
		{"two 2^63-byte buffers live",
		 "alloc a 9223372036854775808\nalloc b 9223372036854775808\n",
		 2},
		{"2^63 bytes in each of two pools, one after the other",
		 "alloc a 9223372036854775808 pool=p\nfree a\n"
		 "alloc b 9223372036854775808 pool=q\n",
		 3},
		{"three 2^62+1-byte buffers aligned at 2^62 (room for two)",
		 "alloc a 4611686018427387905 4611686018427387904\n"
		 "alloc b 4611686018427387905 4611686018427387904\n"
		 "alloc c 4611686018427387905 4611686018427387904\n",
		 0},
		{"a free between them changes nothing: room for two",
		 "alloc a 4611686018427387905 4611686018427387904\n"
		 "alloc x 8\nfree x\n"
		 "alloc b 4611686018427387905 4611686018427387904\n"
		 "alloc c 4611686018427387905 4611686018427387904\n"
		 "free a\nfree b\nfree c\n",
		 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct as_trace *t = NULL;
		struct as_diag d;
		int err = as_trace_parse("big.ops", cases[k].text,
					 strlen(cases[k].text), NULL, &t, &d);
		if (cases[k].line) {
			CHECK(err == AS_EPARSE);
			CHECK_EQ_U64(d.line, cases[k].line);
			CHECK(strcmp(d.msg, "more than 2^64-1 bytes live at "
					    "once") == 0 ||
			      strncmp(d.msg, "more than 2^64-1 bytes live at "
					     "once (", 37) == 0);
			as_trace_destroy(t);
			continue;
		}
		CHECK(err == AS_OK);
		if (!t)
			continue;
		CHECK(as_trace_lower_bound(t) < UINT64_MAX);
		as_trace_destroy(t);
		for (size_t i = 0; i < as_strategy_count(); i++) {
			const char *name = as_strategy_at(i)->name;
			struct as_trace *probe = NULL;
			as_trace_parse("big.ops", cases[k].text,
				       strlen(cases[k].text), NULL, &probe, &d);
			bool applies = as_strategy_applies(name, probe);
			as_trace_destroy(probe);
			if (!applies)
				continue;
			struct test_run r;
			test_run(&r, name, "big.ops", cases[k].text);
			if (!test_run_ok(&r)) {
				printf("#   %s on %s\n", name, cases[k].what);
				test_run_done(&r);
				continue;
			}
			unsigned __int128 sum = 0;
			for (uint16_t sp = 0; sp < r.p->nspaces; sp++)
				sum += as_plan_peak(r.p, r.t, sp);
			if (as_plan_failed(r.p, r.t) == 0 || sum >= UINT64_MAX) {
				printf("#   %s on %s: %u failed, peak %s\n",
				       name, cases[k].what,
				       as_plan_failed(r.p, r.t),
				       sum >= UINT64_MAX ? "saturated" : "ok");
				tap_cur_failed = 1;
			}
			test_run_done(&r);
		}
	}
}

static void config_keys_no_strategy_knows_are_ignored_however_long(void)
{
	const char *text = "config source=/models/mobilenet_v2_1.0_224_"
			   "quantized_int8_batch1_rev20240101.tflite\n"
			   "alloc a 10\n";
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("c.ops", text, strlen(text), "ops", &t,
			     &d) == AS_OK);
	if (!t)
		return;
	CHECK(as_strategy_run("greedy-size", t, NULL, &p, &d) == AS_OK);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * Options that cost time come from the command line: a trace's config may
 * lower strip's budget_ms, rounds, exact_max and search, not raise them
 * (the default, or the spec's value, holds).
 */
static void a_config_lowers_costly_options_and_never_raises_them(void)
{
	const struct as_strategy_info *info = as_strategy_find("strip");
	struct as_opts o;
	struct as_diag d = {0};
	CHECK(info != NULL);
	if (!info)
		return;
	CHECK(as_opts_parse(&o, "strip", info->options,
			    "budget_ms=3600000 search=exact rounds=1000 "
			    "exact_max=6000 nodes=7",
			    NULL, &d) == AS_OK);
	CHECK_STR(as_opts_get(&o, "budget_ms"), "3000");
	CHECK_STR(as_opts_get(&o, "search"), "auto");
	CHECK_STR(as_opts_get(&o, "rounds"), "8");
	CHECK_STR(as_opts_get(&o, "exact_max"), "3000");
	CHECK_STR(as_opts_get(&o, "nodes"), "7");
	CHECK(as_opts_parse(&o, "strip", info->options,
			    "budget_ms=50 search=local rounds=2", NULL,
			    &d) == AS_OK);
	CHECK_STR(as_opts_get(&o, "budget_ms"), "50");
	CHECK_STR(as_opts_get(&o, "search"), "local");
	CHECK_STR(as_opts_get(&o, "rounds"), "2");
	/* the command line may ask for more */
	CHECK(as_opts_parse(&o, "strip", info->options, "budget_ms=50",
			    "budget_ms=60000,search=exact", &d) == AS_OK);
	CHECK_STR(as_opts_get(&o, "budget_ms"), "60000");
	CHECK_STR(as_opts_get(&o, "search"), "exact");
}

static void recorded_needs_offsets_in_the_trace(void)
{
	const char *with = "id,lower,upper,size,offset\n0,0,2,8,16\n";
	const char *without = "alloc a 8\n";
	struct as_trace *t;
	struct as_plan *p;
	struct as_diag d;
	CHECK(as_trace_parse("r.csv", with, strlen(with), NULL, &t,
			     &d) == AS_OK);
	CHECK(as_strategy_applies("recorded", t));
	CHECK(as_strategy_run("recorded", t, NULL, &p, &d) == AS_OK);
	CHECK_EQ_U64(p->offset[0], 16);
	as_plan_destroy(p);
	as_trace_destroy(t);
	CHECK(as_trace_parse("r.ops", without, strlen(without), NULL,
			     &t, &d) == AS_OK);
	CHECK(!as_strategy_applies("recorded", t));
	CHECK(as_strategy_run("recorded", t, NULL, &p, &d) ==
	      AS_EUNSUPPORTED);
	as_trace_destroy(t);
}

static void the_exact_baselines_leave_the_default_set_above_their_size(void)
{
	static const char *const baselines[] = {"greedy-size", "bestfit",
						"greedy-breadth"};
	/* Only the buffer count decides: a trace of that many buffers
	 * (none of them read) stands in for a real one. */
	struct as_trace big = {.nbuffers = AS_PLACE_BASELINE_MAX};
	for (size_t i = 0; i < 3; i++)
		CHECK(as_strategy_by_default(baselines[i], &big));
	big.nbuffers++;
	for (size_t i = 0; i < 3; i++) {
		CHECK(!as_strategy_by_default(baselines[i], &big));
		CHECK(as_strategy_applies(baselines[i], &big));
	}
	CHECK(as_strategy_by_default("strip", &big));
	CHECK(as_strategy_by_default("bfc", &big));
	/* Below it, the default set is every strategy that applies. */
	struct as_trace *t = random_trace(7, 200, false);
	for (size_t s = 0; s < as_strategy_count(); s++) {
		const char *name = as_strategy_at(s)->name;
		CHECK(as_strategy_by_default(name, t) ==
		      as_strategy_applies(name, t));
	}
	as_trace_destroy(t);
}

static void unknown_strategies_and_options_are_refused_by_name(void)
{
	const char *text = "alloc a 8\n";
	struct as_trace *t;
	struct as_plan *p = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("r.ops", text, strlen(text), NULL, &t,
			     &d) == AS_OK);
	CHECK(as_strategy_run("no-such", t, NULL, &p, &d) == AS_ENOTFOUND);
	CHECK(strstr(d.msg, "unknown strategy 'no-such'") != NULL);
	CHECK(as_strategy_run("greedy-size:color=blue", t, NULL, &p, &d) ==
	      AS_ENOTFOUND);
	CHECK(strstr(d.msg, "unknown option 'color'") != NULL);
	CHECK(as_strategy_run("greedy-size:junk", t, NULL, &p, &d) ==
	      AS_EINVAL);
	CHECK(p == NULL);
	as_trace_destroy(t);
}

static void input_aliases_follow_their_parent_in_every_plan(void)
{
	const char *text =
		"{\"format\": \"allocscope-trace\", \"version\": 1, \"events\": ["
		"{\"op\": \"alloc\", \"name\": \"p\", \"size\": 64},"
		"{\"op\": \"alloc\", \"name\": \"v\", \"size\": 32,"
		" \"alias_of\": \"p\", \"alias_offset\": 32},"
		"{\"op\": \"alloc\", \"name\": \"q\", \"size\": 64},"
		"{\"op\": \"free\", \"name\": \"v\"},"
		"{\"op\": \"free\", \"name\": \"p\"}]}";
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("a.json", text, strlen(text), NULL, &t,
			     &d) == AS_OK);
	if (!t)
		return;
	CHECK(as_strategy_run("greedy-size", t, NULL, &p, &d) == AS_OK);
	CHECK_EQ_U64(p->offset[1], p->offset[0] + 32);
	as_plan_destroy(p);
	conform(t, "alias trace");
	as_trace_destroy(t);
}

/* What a walk saw: blocks in visiting order. */
struct seen {
	struct as_block b[4096];
	uint16_t space[4096];
	uint32_t n;
	bool overflow;
};

static bool collect_block(void *ctx, uint16_t space, const struct as_block *b)
{
	struct seen *s = ctx;
	if (s->n == sizeof(s->b) / sizeof(s->b[0])) {
		s->overflow = true;
		return false;
	}
	s->space[s->n] = space;
	s->b[s->n++] = *b;
	return true;
}

/*
 * At a time T, every online allocator's walk gives its blocks in address
 * order (per space and region), none overlapping, and every buffer its plan
 * placed that is live at T lies inside a block in use.
 */
static void walk_matches(const char *name, const struct as_trace *t,
			 const struct as_plan *p, uint64_t T)
{
	static struct seen s;
	struct as_diag d = {0};
	s.n = 0;
	s.overflow = false;
	if (as_strategy_walk_at(name, t, NULL, T, collect_block, &s, &d) != AS_OK) {
		printf("#   %s walk at %llu: %s\n", name,
		       (unsigned long long)T, d.msg);
		tap_cur_failed = 1;
		return;
	}
	CHECK(!s.overflow);
	for (uint32_t k = 1; k < s.n; k++) {
		const struct as_block *a = &s.b[k - 1], *b = &s.b[k];
		bool same = s.space[k] == s.space[k - 1] &&
			    (a->region == b->region ||
			     (a->region && b->region &&
			      strcmp(a->region, b->region) == 0));
		if (same && a->offset + a->size > b->offset) {
			printf("#   %s at %llu: block %u [%llu, +%llu) runs "
			       "into the next at %llu\n",
			       name, (unsigned long long)T, k - 1,
			       (unsigned long long)a->offset,
			       (unsigned long long)a->size,
			       (unsigned long long)b->offset);
			tap_cur_failed = 1;
			return;
		}
	}
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		if (!(b->start < T && b->end >= T) || b->size == 0 ||
		    p->offset[i] == AS_NO_OFFSET ||
		    as_plan_alias_of(p, t, i) != AS_NONE)
			continue;
		bool inside = false;
		for (uint32_t k = 0; k < s.n && !inside; k++)
			inside = s.b[k].in_use && s.space[k] == b->space &&
				 s.b[k].offset <= p->offset[i] &&
				 p->offset[i] + b->size <=
					 s.b[k].offset + s.b[k].size;
		if (!inside) {
			printf("#   %s at %llu: live buffer %s at %llu is in "
			       "no block in use\n",
			       name, (unsigned long long)T, b->name,
			       (unsigned long long)p->offset[i]);
			tap_cur_failed = 1;
			return;
		}
	}
}

static void online_allocators_walk_their_blocks_in_address_order(void)
{
	for (uint64_t k = 0; k < 6; k++) {
		struct as_trace *t = random_trace(7000 + k, 300, false);
		CHECK(t != NULL);
		for (size_t i = 0; t && i < as_strategy_count(); i++) {
			const struct as_strategy_info *info = as_strategy_at(i);
			if (!info->online || !as_strategy_applies(info->name, t))
				continue;
			struct as_plan *p = NULL;
			struct as_diag d = {0};
			if (as_strategy_run(info->name, t, NULL, &p, &d)) {
				printf("#   %s: %s\n", info->name, d.msg);
				tap_cur_failed = 1;
				continue;
			}
			/* The state after the last event before T. */
			uint64_t times[] = {t->end_time / 3, t->end_time / 2,
					    t->end_time};
			for (size_t j = 0; j < 3; j++)
				walk_matches(info->name, t, p, times[j]);
			as_plan_destroy(p);
		}
		as_trace_destroy(t);
	}
}

static void offline_planners_have_no_state_to_walk(void)
{
	struct as_trace *t = random_trace(1, 20, false);
	struct as_diag d = {0};
	static struct seen s;
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(as_strategy_walk_at("greedy-size", t, NULL, 5, collect_block, &s,
				  &d) == AS_EUNSUPPORTED);
	CHECK(strstr(d.msg, "no allocator state") != NULL);
	as_trace_destroy(t);
}

/* Whether two plans give every buffer the same offset. */
static bool same_offsets(const struct as_plan *a, const struct as_plan *b)
{
	if (a->nbuffers != b->nbuffers)
		return false;
	for (uint32_t i = 0; i < a->nbuffers; i++)
		if (a->offset[i] != b->offset[i])
			return false;
	return true;
}

static void a_baseline_run_twice_on_one_runner_is_planned_once(void)
{
	static const char *const specs[] = {"greedy-size", "greedy-breadth",
					    "bestfit"};
	for (size_t k = 0; k < sizeof(specs) / sizeof(*specs); k++) {
		struct as_trace *t = random_trace(7 + k, 400, false);
		struct as_runner *r = NULL;
		struct as_plan *a = NULL, *b = NULL;
		struct as_diag d = {0};
		CHECK(t && as_runner_create(t, NULL, &r) == AS_OK);
		CHECK(r && as_runner_run(r, specs[k], &a, &d) == AS_OK);
		CHECK(r && as_runner_run(r, specs[k], &b, &d) == AS_OK);
		as_runner_destroy(r);
		if (a && b) {
			CHECK(a != b && a->offset != b->offset);
			CHECK(same_offsets(a, b));
			/* The second is the first's copy: its time too. */
			CHECK(a->plan_ms == b->plan_ms);
		}
		as_plan_destroy(a);
		as_plan_destroy(b);
		as_trace_destroy(t);
	}
}

static void strip_after_the_baselines_plans_as_strip_alone(void)
{
	/* nodes= makes the search machine independent: same plan twice. */
	const char *strip = "strip:nodes=200,budget_ms=600000";
	struct as_trace *alone = random_trace(11, 600, false);
	struct as_trace *after = random_trace(11, 600, false);
	struct as_runner *r = NULL;
	struct as_plan *a = NULL, *b = NULL, *g = NULL;
	struct as_diag d = {0};
	CHECK(alone && as_strategy_run(strip, alone, NULL, &a, &d) == AS_OK);
	CHECK(after && as_runner_create(after, NULL, &r) == AS_OK);
	CHECK(r && as_runner_run(r, "greedy-size", &g, &d) == AS_OK);
	CHECK(r && as_runner_run(r, strip, &b, &d) == AS_OK);
	as_runner_destroy(r);
	if (a && b)
		CHECK(same_offsets(a, b));
	as_plan_destroy(a);
	as_plan_destroy(b);
	as_plan_destroy(g);
	as_trace_destroy(alone);
	as_trace_destroy(after);
}

/*
 * The default set of a random trace run on four threads, the reusers
 * (strip) named first so they wait for the baselines the others make, and
 * one at a time on a copy of the trace: the same plans.
 */
static void strategies_run_side_by_side_plan_as_one_at_a_time(void)
{
	static const char *const specs[] = {
		"strip:nodes=200,budget_ms=600000", "greedy-size", "bfc",
		"greedy-breadth", "bestfit", "cuda-caching", "tiered",
		"npu-list"};
	enum { N = sizeof(specs) / sizeof(*specs) };
	struct as_trace *side = random_trace(13, 800, true);
	struct as_trace *alone = random_trace(13, 800, true);
	struct as_plan *a[N] = {0}, *b[N] = {0};
	struct as_diag da[N] = {0}, db = {0};
	CHECK(side && run_many(side, specs, N, NULL, NULL, 4, a, da) ==
			      AS_OK);
	for (size_t i = 0; alone && i < N; i++) {
		CHECK(as_strategy_run(specs[i], alone, NULL, &b[i], &db) ==
		      AS_OK);
		CHECK(a[i] && b[i] && same_offsets(a[i], b[i]));
	}
	for (size_t i = 0; i < N; i++) {
		as_plan_destroy(a[i]);
		as_plan_destroy(b[i]);
	}
	as_trace_destroy(side);
	as_trace_destroy(alone);
}

/*
 * A walk borrows a processor (for a placer's puts) only while fewer than
 * the run's processors are at work, and gives it back.
 */
static void a_walk_borrows_only_the_processors_left_idle(void)
{
	for (unsigned max = 1; max <= 3; max++) {
		struct as_procs p = {.max = max};
		atomic_store(&p.busy, 1); /* one run at work */
		unsigned got = 0;
		while (got < 8 && as_procs_claim(&p))
			got++;
		CHECK_EQ_U64(got, max - 1);
		for (unsigned k = 0; k < got; k++)
			as_procs_release(&p);
		CHECK_EQ_U64(atomic_load(&p.busy), 1);
	}
	CHECK(!as_procs_claim(NULL)); /* outside a run of many: none */
}

struct started {
	size_t order[8], n;
};

static bool note_start(void *ctx, size_t i)
{
	struct started *st = ctx;
	if (st->n < 8)
		st->order[st->n++] = i;
	return true;
}

/*
 * The runs start in the order given, except that a spec made of parts
 * (bestfit, which waits for its two orders) starts after the rest and strip
 * (which reuses the others' plans) last.
 */
static void runs_start_in_the_callers_order_those_that_wait_last(void)
{
	static const char *const specs[] = {"strip:nodes=200", "bestfit",
					    "greedy-size", "bfc"};
	struct as_trace *t = random_trace(31, 60, false);
	struct started st = {0};
	struct as_many_hooks mh = {.start = note_start, .ctx = &st};
	struct as_plan *p[4] = {0};
	struct as_diag d[4] = {0};
	CHECK(t && run_many(t, specs, 4, NULL, &mh, 1, p, d) ==
			   AS_OK);
	CHECK_EQ_U64(st.n, 4);
	static const size_t want[] = {2, 3, 1, 0};
	for (size_t k = 0; k < 4 && k < st.n; k++)
		CHECK_EQ_U64(st.order[k], want[k]);
	for (size_t k = 0; k < 4; k++)
		as_plan_destroy(p[k]);
	as_trace_destroy(t);
}

/* Per address space (pools), the order with the lower peak there, ties
 * to the size order. */
static bool lower_order_per_space(const struct as_trace *t,
				  const struct as_plan *both,
				  const struct as_plan *size,
				  const struct as_plan *length)
{
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		int s = t->buffers[i].space;
		const struct as_plan *w =
			as_plan_peak(length, t, s) < as_plan_peak(size, t, s)
				? length
				: size;
		if (both->offset[i] != w->offset[i])
			return false;
	}
	return true;
}

static void bestfit_keeps_the_lower_of_its_two_orders(void)
{
	for (uint64_t seed = 21; seed < 27; seed++) {
		struct as_trace *t = seed < 25 ? random_trace(seed, 500, false)
					       : test_random_pools_trace(
							 seed, 3, 3000);
		struct as_plan *both = NULL, *size = NULL, *length = NULL;
		struct as_runner *r = NULL;
		struct as_diag d = {0};
		CHECK(t && as_runner_create(t, NULL, &r) == AS_OK);
		CHECK(r && as_runner_run(r, "bestfit:order=size", &size, &d) ==
				   AS_OK);
		CHECK(r && as_runner_run(r, "bestfit:order=length", &length,
					 &d) == AS_OK);
		CHECK(r && as_runner_run(r, "bestfit", &both, &d) == AS_OK);
		as_runner_destroy(r);
		if (both && size && length) {
			CHECK(lower_order_per_space(t, both, size, length));
			if (t->nspaces <= 1)
				CHECK(test_stat(both, "length_order_won") ==
				      (as_plan_peak(length, t, -1) <
				       as_plan_peak(size, t, -1)));
			/* Its time is both orders' (kept by the runner). */
			CHECK(both->plan_ms >= size->plan_ms + length->plan_ms);
		}
		as_plan_destroy(both);
		as_plan_destroy(size);
		as_plan_destroy(length);
		as_trace_destroy(t);
	}
}

static void strategies_run_one_at_a_time_by_default_above_the_baselines_size(
	void)
{
	/* Only the buffer count decides, as for the default set. */
	struct as_trace big = {.nbuffers = AS_PLACE_BASELINE_MAX};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned want = cpus < 1 ? 1 : cpus > 64 ? 64 : (unsigned)cpus;
	CHECK_EQ_U64(as_runner_jobs_default(&big), want);
	big.nbuffers++;
	CHECK_EQ_U64(as_runner_jobs_default(&big), 1);
}

static void a_strategy_that_fails_beside_others_is_reported_by_its_slot(void)
{
	static const char *const specs[] = {"greedy-size", "no-such-strategy",
					    "bfc", "bestfit:no_such_key=1"};
	enum { N = sizeof(specs) / sizeof(*specs) };
	struct as_trace *t = random_trace(17, 300, false);
	struct as_plan *p[N] = {0};
	struct as_diag d[N] = {0};
	CHECK(t && run_many(t, specs, N, NULL, NULL, 3, p, d) ==
			   AS_ENOTFOUND);
	CHECK(p[0] && !p[1] && p[2] && !p[3]);
	CHECK(strstr(d[1].msg, "no-such-strategy") != NULL);
	CHECK(strstr(d[3].msg, "no_such_key") != NULL);
	for (size_t i = 0; i < N; i++)
		as_plan_destroy(p[i]);
	as_trace_destroy(t);
}

/*
 * The default set's rule: under a step limit an exact baseline whose walk
 * needs more stops and says so, strip beside it starts from the baselines
 * that finished, and the same trace without the limit (or with one no walk
 * reaches) gets the plans of a run that never had one.
 */
static void a_baseline_past_its_step_limit_stops_and_strip_goes_on(void)
{
	static const char *const specs[] = {
		"greedy-size", "greedy-breadth", "bestfit",
		"strip:nodes=200,budget_ms=600000"};
	enum { N = sizeof(specs) / sizeof(*specs) };
	struct as_trace *t = random_trace(29, 3000, false);
	struct as_trace *plain = random_trace(29, 3000, false);
	struct as_runner_options tight = {.step_limit = 1000};
	struct as_runner_options loose = {.step_limit = UINT64_MAX / 2};
	struct as_plan *p[N] = {0}, *q[N] = {0}, *r[N] = {0};
	struct as_diag d[N] = {0}, dq[N] = {0};
	struct as_report rep;
	CHECK(t && run_many(t, specs, N, &tight, NULL, 2, p, d) ==
			   AS_ELIMIT);
	for (size_t i = 0; i < N - 1; i++) {
		CHECK(!p[i] && d[i].err == AS_ELIMIT);
		CHECK(strstr(d[i].msg, "step limit of 1000") != NULL);
	}
	CHECK(p[N - 1] && as_validate(t, p[N - 1], &rep) == AS_OK &&
	      rep.valid);
	/* The stops kept for the trace do not stand for runs without. */
	CHECK(t && run_many(t, specs, N, NULL, NULL, 2, q, dq) ==
			   AS_OK);
	for (size_t i = 0; plain && i < N; i++) {
		CHECK(as_strategy_run(specs[i], plain, &loose, &r[i], dq) ==
		      AS_OK);
		CHECK(q[i] && r[i] && same_offsets(q[i], r[i]));
	}
	for (size_t i = 0; i < N; i++) {
		as_plan_destroy(p[i]);
		as_plan_destroy(q[i]);
		as_plan_destroy(r[i]);
	}
	as_trace_destroy(t);
	as_trace_destroy(plain);
	/* A chain (each buffer freed after the next one's allocation) has
	 * few overlaps: greedy-size's interval tree counts its steps too. */
	struct as_builder *b = as_builder_create("chain", "ops");
	struct as_diag bd;
	char name[32], prev[32] = "";
	for (uint32_t i = 0; b && i < 3000; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		as_builder_alloc(b, name, 16 + i % 7 * 16, 16, 0, &bd);
		if (prev[0])
			as_builder_free(b, prev, 0, &bd);
		memcpy(prev, name, sizeof(name));
	}
	struct as_trace *chain = NULL;
	struct as_plan *c = NULL;
	CHECK(b && as_builder_finish(b, &chain, &bd) == AS_OK);
	CHECK(chain && as_strategy_run("greedy-size", chain, &tight, &c,
				       &bd) == AS_ELIMIT);
	CHECK(chain && as_strategy_run("greedy-size", chain, NULL, &c, &bd) ==
			       AS_OK);
	as_plan_destroy(c);
	as_trace_destroy(chain);
	/* 4 n log2(n)^2 steps, and no fewer than the least limit. */
	struct as_trace big = {.nbuffers = 1u << 22};
	CHECK_EQ_U64(as_strategy_step_limit(&big), 4 * (1ull << 22) * 22 * 22);
	big.nbuffers = 1000;
	CHECK_EQ_U64(as_strategy_step_limit(&big), 1ull << 31);
}

/* Whether SPEC alone plans random trace (seed, n) within step limit L. */
static bool plans_within(const char *spec, uint64_t seed, uint32_t n,
			 uint64_t limit)
{
	struct as_trace *t = random_trace(seed, n, false);
	struct as_runner_options h = {.step_limit = limit};
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	bool ok = t && as_strategy_run(spec, t, &h, &p, &d) == AS_OK;
	as_plan_destroy(p);
	as_trace_destroy(t);
	return ok;
}

/* The least step limit (below 2^32) under which SPEC plans the trace. */
static uint64_t least_limit(const char *spec, uint64_t seed, uint32_t n)
{
	uint64_t lo = 1, hi = 1ull << 32; /* plans within hi, not within lo */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (plans_within(spec, seed, n, mid))
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/*
 * Side by side, once one of bestfit's orders stops at the step limit the
 * other is called off: bestfit is left out whatever it would do, so its
 * walk stops at its next find and is kept as stopped, though alone it
 * would have planned within the limit. The order that stops is kept as
 * stopped beforehand, so it fails at once; the other order's walk takes
 * milliseconds, so the call-off reaches it unless its thread is held up
 * that long, and the test gives it three tries.
 */
static void once_one_order_stops_the_other_is_called_off(void)
{
	const char *const order[2] = {"bestfit:order=size",
				      "bestfit:order=length"};
	const char *const bestfit[] = {"bestfit"};
	uint64_t seed = 41, least[2] = {0, 0};
	for (; seed < 61; seed++) {
		least[0] = least_limit(order[0], seed, 1000);
		least[1] = least_limit(order[1], seed, 1000);
		if (least[0] != least[1])
			break;
	}
	CHECK(least[0] != least[1]);
	int stops = least[0] > least[1] ? 0 : 1; /* the costlier order */
	struct as_runner_options h = {.step_limit = least[1 - stops],
				      .jobs = 2};
	bool called_off = false;
	for (int attempt = 0; attempt < 3 && !called_off; attempt++) {
		struct as_trace *t = random_trace(seed, 1000, false);
		struct as_runner *r = NULL;
		struct as_plan *p = NULL;
		struct as_diag d = {0};
		CHECK(t && as_runner_create(t, &h, &r) == AS_OK);
		CHECK(r && as_runner_run(r, order[stops], &p, &d) == AS_ELIMIT);
		CHECK(r && as_runner_run_many(r, bestfit, 1, NULL, &p, &d) ==
				   AS_ELIMIT);
		CHECK(!p && strstr(d.msg, "bestfit stopped at its step limit"));
		called_off = r && as_runner_run(r, order[1 - stops], &p, &d) ==
					  AS_ELIMIT;
		as_plan_destroy(p);
		as_runner_destroy(r);
		as_trace_destroy(t);
	}
	CHECK(called_off);
	/* Alone, the order called off plans within the same limit. */
	CHECK(plans_within(order[1 - stops], seed, 1000, h.step_limit));
}

int main(void)
{
	TEST_RUN(every_strategy_plans_random_traces_validly_above_the_bound);
	TEST_RUN(every_strategy_plans_every_bundled_trace);
	if (tap_shared_dir())
		TEST_RUN(every_strategy_plans_the_minimalloc_benchmarks);
	else
		TEST_SKIP(every_strategy_plans_the_minimalloc_benchmarks,
			  "../shared is absent");
	TEST_RUN(greedy_size_places_largest_first_at_the_lowest_fit);
	TEST_RUN(greedy_size_honours_alignment);
	TEST_RUN(every_strategy_follows_one_rule_past_2_64_bytes);
	TEST_RUN(config_keys_no_strategy_knows_are_ignored_however_long);
	TEST_RUN(a_config_lowers_costly_options_and_never_raises_them);
	TEST_RUN(recorded_needs_offsets_in_the_trace);
	TEST_RUN(the_exact_baselines_leave_the_default_set_above_their_size);
	TEST_RUN(unknown_strategies_and_options_are_refused_by_name);
	TEST_RUN(input_aliases_follow_their_parent_in_every_plan);
	TEST_RUN(online_allocators_walk_their_blocks_in_address_order);
	TEST_RUN(offline_planners_have_no_state_to_walk);
	TEST_RUN(a_baseline_run_twice_on_one_runner_is_planned_once);
	TEST_RUN(strip_after_the_baselines_plans_as_strip_alone);
	TEST_RUN(strategies_run_side_by_side_plan_as_one_at_a_time);
	TEST_RUN(a_walk_borrows_only_the_processors_left_idle);
	TEST_RUN(bestfit_keeps_the_lower_of_its_two_orders);
	TEST_RUN(runs_start_in_the_callers_order_those_that_wait_last);
	TEST_RUN(strategies_run_one_at_a_time_by_default_above_the_baselines_size);
	TEST_RUN(a_strategy_that_fails_beside_others_is_reported_by_its_slot);
	TEST_RUN(a_baseline_past_its_step_limit_stops_and_strip_goes_on);
	TEST_RUN(once_one_order_stops_the_other_is_called_off);
	return tap_done();
}
