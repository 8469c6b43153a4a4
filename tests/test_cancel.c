/*
 * Canceling, without a clock: a runner's test-only hook
 * (as_runner_cancel_after) sets its cancel flag at the (N + 1)th look any
 * of its runs takes at it, so every strategy is canceled at the same place
 * on every machine, however loaded. Each run either stops with
 * AS_ECANCELED and no plan, or ended before its N + 1th look; the ASan leg
 * (detect_leaks=1) and the valgrind leg see that a stopped run holds
 * nothing.
 */
#include "allocscope/allocscope.h"
#include "allocscope/compare.h"
#include "helpers.h"
#include "strategies/strategy.h"

/* The looks a run may take before its flag is set: none, one, a few, many. */
static const uint64_t checks[] = {0, 1, 3, 40, 2000, 10000000};
#define NCHECKS (sizeof(checks) / sizeof(*checks))

/* Strategies with no loop long enough to look at the flag: they copy. */
static bool never_looks(const char *name)
{
	return strcmp(name, "recorded") == 0;
}

/* The traces a strategy is tried on; the first it applies to is used. */
struct traces {
	struct as_trace *t[3];
	const char *what[3];
};

static void traces_load(struct traces *tr)
{
	static const char *const files[] = {"traces/cnn-recorded.csv",
					    "traces/numa-ragged.json"};
	memset(tr, 0, sizeof(*tr));
	/* One space, about 3000 buffers, cases: every other strategy. */
	tr->t[0] = test_random_pools_trace(48, 1, 6000);
	tr->what[0] = "a random trace";
	CHECK(tr->t[0] != NULL);
	for (size_t k = 0; k < 2; k++) {
		char path[1024];
		struct as_diag d;
		test_source_path(path, sizeof(path), files[k]);
		tr->what[k + 1] = files[k];
		if (as_trace_load(path, NULL, &tr->t[k + 1], &d) != AS_OK) {
			printf("#   %s: %s\n", path, d.msg);
			tap_cur_failed = 1;
		}
	}
}

static void traces_free(struct traces *tr)
{
	for (size_t k = 0; k < 3; k++)
		as_trace_destroy(tr->t[k]);
}

static size_t trace_for(const struct traces *tr, const char *name)
{
	for (size_t k = 0; k < 3; k++)
		if (tr->t[k] && as_strategy_applies(name, tr->t[k]))
			return k;
	return 3;
}

/*
 * SPEC run on t by a runner whose flag is set at look `after` + 1: the
 * result, which is AS_ECANCELED with no plan and a diag that says so, or
 * AS_OK with a valid plan. Later runs on that runner fail at once.
 */
static int run_canceled_after(const struct as_trace *t, const char *spec,
			      uint64_t after)
{
	struct as_runner *r = NULL;
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	CHECK(as_runner_create(t, NULL, &r) == AS_OK);
	if (!r)
		return AS_ENOMEM;
	as_runner_cancel_after(r, after);
	int err = as_runner_run(r, spec, &p, &d);
	if (err == AS_ECANCELED) {
		CHECK(p == NULL);
		CHECK(d.err == AS_ECANCELED && strstr(d.msg, "canceled"));
		/* The flag stays set: the next run does not start. */
		struct as_plan *q = NULL;
		CHECK_EQ_U64(as_runner_run(r, spec, &q, &d), AS_ECANCELED);
		CHECK(q == NULL);
	} else if (err == AS_OK) {
		struct as_report rep;
		CHECK(p && as_validate(t, p, &rep) == AS_OK && rep.valid);
	} else {
		printf("#   %s: %s\n", spec, d.msg);
		CHECK(false);
	}
	as_plan_destroy(p);
	as_runner_destroy(r);
	return err;
}

/*
 * Every strategy of the registry, canceled after 0, 1, 3, 40, 2000 and
 * 10^7 looks at its flag: AS_ECANCELED with nothing held, or a whole plan when
 * it ended first. With none allowed every strategy that has a loop stops
 * (the numa planners included); a run that ended within N looks ends
 * within more.
 */
static void every_strategy_stops_at_the_nth_look_at_its_cancel_flag(void)
{
	struct traces tr;
	traces_load(&tr);
	for (size_t s = 0; s < as_strategy_count(); s++) {
		const struct as_strategy_info *info = as_strategy_at(s);
		size_t k = trace_for(&tr, info->name);
		if (k == 3) {
			printf("#   %s: no trace it applies to\n", info->name);
			CHECK(false);
			continue;
		}
		/* strip searches for budget_ms: here until a count of
		 * nodes instead, the same on every machine. */
		char spec[96];
		snprintf(spec, sizeof(spec), "%s%s", info->name,
			 strcmp(info->name, "strip") == 0
				 ? ":budget_ms=600000,nodes=3000,bound=0"
				 : "");
		char seen[NCHECKS * 4 + 1] = "";
		bool ended = false;
		for (size_t c = 0; c < NCHECKS; c++) {
			int err = run_canceled_after(tr.t[k], spec, checks[c]);
			if (c == 0 && !never_looks(info->name))
				CHECK_EQ_U64(err, AS_ECANCELED);
			/* Once it ends within N looks, it ends within more. */
			if (ended)
				CHECK_EQ_U64(err, AS_OK);
			ended |= err == AS_OK;
			strcat(seen, err == AS_OK ? " ok" : " c");
		}
		printf("#   %s on %s, after 0 1 3 40 2000 10^7 looks:%s\n", spec,
		       tr.what[k], seen);
	}
	traces_free(&tr);
}

/*
 * strip's two searches with ten minutes of budget stop at the hook's look
 * like every other loop, without waiting for their deadline.
 */
static void strips_long_searches_stop_at_the_nth_look(void)
{
	static const char *const specs[] = {
		"strip:budget_ms=600000,search=exact,baselines=off",
		"strip:budget_ms=600000,search=local,baselines=off",
	};
	struct as_trace *t = test_random_pools_trace(2024, 1, 6000);
	CHECK(t != NULL);
	for (size_t k = 0; t && k < sizeof(specs) / sizeof(*specs); k++)
		for (size_t c = 0; c + 1 < NCHECKS; c++) /* not 10^7 */
			CHECK_EQ_U64(run_canceled_after(t, specs[k], checks[c]),
				     AS_ECANCELED);
	as_trace_destroy(t);
}

/*
 * Runs side by side on two threads (the placer's puts on a spare
 * processor) share the runner's flag and the hook's count: both stop with
 * AS_ECANCELED and no plan, and the runner fails every later run at once.
 */
static void runs_side_by_side_stop_together_with_nothing_held(void)
{
	static const char *const specs[] = {"bestfit", "greedy-breadth"};
	struct as_trace *t = test_random_pools_trace(47, 1, 20000);
	CHECK(t != NULL);
	for (size_t c = 0; t && c + 1 < NCHECKS; c++) {
		struct as_runner_options o = {.jobs = 2};
		struct as_runner *r = NULL;
		struct as_plan *p[2] = {NULL, NULL};
		struct as_diag d[2];
		CHECK(as_runner_create(t, &o, &r) == AS_OK);
		if (!r)
			break;
		as_runner_cancel_after(r, checks[c]);
		CHECK_EQ_U64(as_runner_run_many(r, specs, 2, NULL, p, d),
			     AS_ECANCELED);
		for (size_t i = 0; i < 2; i++) {
			CHECK(!p[i] && d[i].err == AS_ECANCELED);
			CHECK(strstr(d[i].msg, "canceled") != NULL);
			as_plan_destroy(p[i]);
		}
		struct as_plan *q = NULL;
		CHECK_EQ_U64(as_runner_run(r, "bfc", &q, &d[0]), AS_ECANCELED);
		CHECK(!q);
		as_runner_destroy(r);
	}
	as_trace_destroy(t);
}

/*
 * The walks of online allocators (explain's fragmentation, the renderer's
 * blocks, the viewer's state panel: as_strategy_blocks_at) are runs too:
 * the hook stops them with AS_ECANCELED and nothing held; run to the end
 * they give the blocks.
 */
static void walks_to_a_moment_stop_at_the_nth_look(void)
{
	struct traces tr;
	traces_load(&tr);
	for (size_t s = 0; s < as_strategy_count(); s++) {
		const struct as_strategy_info *info = as_strategy_at(s);
		size_t k = trace_for(&tr, info->name);
		if (!info->online || k == 3)
			continue;
		/* Just after a buffer in the middle starts: it is live. */
		const struct as_trace *t = tr.t[k];
		const struct as_buffer *mid = &t->buffers[t->nbuffers / 2];
		for (size_t c = 0; c < NCHECKS + 1; c++) {
			struct as_runner *r = NULL;
			struct as_block *b = NULL;
			size_t n = 0;
			struct as_diag d = {0};
			CHECK(as_runner_create(t, NULL, &r) == AS_OK);
			if (!r)
				break;
			if (c < NCHECKS)
				as_runner_cancel_after(r, checks[c]);
			int err = as_runner_blocks_at(r, info->name,
						      mid->start, mid->space,
						      &b, &n, &d);
			if (c == 0 || err == AS_ECANCELED) {
				CHECK_EQ_U64(err, AS_ECANCELED);
				CHECK(b == NULL && strstr(d.msg, "canceled"));
			} else {
				CHECK_EQ_U64(err, AS_OK);
			}
			if (c == NCHECKS)
				CHECK(err == AS_OK && n > 0);
			free(b);
			as_runner_destroy(r);
		}
	}
	traces_free(&tr);
}

/*
 * The runs that make their runner inside (as_strategy_run,
 * as_strategy_walk_at, as_results_run) stop on the caller's flag
 * (struct as_runner_options.cancel), and a runner given that flag is stopped
 * by it as by as_runner_cancel.
 */
static void the_callers_flag_cancels_runs_made_on_a_runner_of_their_own(void)
{
	struct as_trace *t = test_random_pools_trace(7, 1, 2000);
	CHECK(t != NULL);
	if (!t)
		return;
	atomic_bool flag = true;
	struct as_runner_options o = {.cancel = &flag};
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	CHECK_EQ_U64(as_strategy_run("greedy-size", t, &o, &p, &d),
		     AS_ECANCELED);
	CHECK(p == NULL);
	struct as_block *b = NULL;
	size_t n;
	CHECK_EQ_U64(as_strategy_blocks_at("bfc", t, &o, 10, 0, &b, &n, &d),
		     AS_ECANCELED);
	CHECK(b == NULL);
	struct as_results *res = as_results_create();
	CHECK(res && as_results_run(res, t, "bfc", &o, &d) == AS_ECANCELED);
	as_results_destroy(res);
	atomic_store(&flag, false);
	CHECK_EQ_U64(as_strategy_run("greedy-size", t, &o, &p, &d), AS_OK);
	as_plan_destroy(p);
	p = NULL;
	struct as_runner *r = NULL;
	CHECK(as_runner_create(t, &o, &r) == AS_OK);
	as_runner_cancel(r);
	CHECK(atomic_load(&flag));
	CHECK(r && as_runner_run(r, "bfc", &p, &d) == AS_ECANCELED);
	as_runner_destroy(r);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(every_strategy_stops_at_the_nth_look_at_its_cancel_flag);
	TEST_RUN(strips_long_searches_stop_at_the_nth_look);
	TEST_RUN(runs_side_by_side_stop_together_with_nothing_held);
	TEST_RUN(walks_to_a_moment_stop_at_the_nth_look);
	TEST_RUN(the_callers_flag_cancels_runs_made_on_a_runner_of_their_own);
	return tap_done();
}
