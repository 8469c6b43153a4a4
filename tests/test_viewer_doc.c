/*
 * Tests of the viewer's doc (viewer/doc.c) without a display: strategies
 * are planned on a thread, cheapest first, each plan lands in its spec's
 * slot and equals a plan made directly; a failing strategy keeps the other
 * plans; a doc let go of while its thread plans is freed by that thread
 * (run under valgrind for the leaks). The thread is held between
 * strategies (doc_opts.hold, doc_allow) where an order is checked.
 */
#define _GNU_SOURCE /* mkdtemp */
#include <unistd.h>

#include "tap.h"
#include "viewer.h"

static char dir[64], small_csv[128], big_csv[128];

/* n buffers of seeded random sizes and lifetimes, as CSV. */
static void write_trace(const char *path, uint32_t n, uint64_t seed)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "id,lower,upper,size\n");
	uint64_t x = seed;
	for (uint32_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t life = 1 + (x >> 33) % 400, size = 16 + (x >> 13) % 8192;
		fprintf(f, "b%u,%u,%llu,%llu\n", i, i,
			(unsigned long long)(i + life), (unsigned long long)size);
	}
	fclose(f);
}

/* Wait up to 60 s for every doc to be freed by whoever let go last. */
static bool all_freed(void)
{
	for (int i = 0; i < 6000 && doc_live_jobs() != 0; i++)
		SDL_Delay(10);
	return doc_live_jobs() == 0;
}

static size_t ready_count(const struct doc *d)
{
	size_t n = 0;
	for (size_t i = 0; i < d->ns; i++)
		n += d->s[i].ready;
	return n;
}

/* Slot i's plan is the one as_strategy_run makes on a trace of its own. */
static void check_same_plan(const struct doc *d, size_t i)
{
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag diag = {0};
	CHECK(as_trace_load(d->path, NULL, &t, &diag) == AS_OK);
	CHECK(t && as_strategy_run(d->s[i].spec, t, NULL, &p, &diag) == AS_OK);
	CHECK(d->s[i].plan != NULL);
	if (p && d->s[i].plan) {
		CHECK_EQ_U64(d->s[i].peak, as_plan_peak(p, t, -1));
		bool same = true;
		for (uint32_t b = 0; b < t->nbuffers; b++)
			same &= p->offset[b] == d->s[i].plan->offset[b];
		CHECK(same);
		CHECK(d->s[i].report.valid);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void plans_arrive_in_their_spec_slots_cheapest_first_strip_last(void)
{
	/* strip with a fixed effort: the same plan at any speed. */
	const char *specs[] = {"strip:nodes=200,budget_ms=600000",
			       "greedy-size", "bfc", "bestfit"};
	struct doc d = {0};
	struct as_diag diag = {0};
	struct doc_opts o = {.hold = true};
	CHECK(doc_load(&d, small_csv, specs, 4, &o, &diag) == AS_OK);
	CHECK_EQ_U64(d.ns, 4);
	CHECK(d.lb > 0);
	CHECK_EQ_U64(doc_poll(&d), 0);
	CHECK_EQ_U64(ready_count(&d), 0);
	size_t slot;
	double ms;
	CHECK(!doc_planning(&d, &slot, &ms));
	/* One strategy: the online allocator, in slot 2. */
	doc_allow(&d, 1);
	doc_wait(&d, 1);
	CHECK_EQ_U64(ready_count(&d), 1);
	CHECK(d.s[2].ready && d.s[2].plan && !d.s[2].err);
	CHECK_STR(d.s[2].spec, "bfc");
	/* The baselines next, strip not before them. */
	doc_allow(&d, 3);
	doc_wait(&d, 3);
	CHECK_EQ_U64(ready_count(&d), 3);
	CHECK(d.s[1].ready && d.s[3].ready && !d.s[0].ready);
	doc_allow(&d, SIZE_MAX);
	doc_wait(&d, SIZE_MAX);
	CHECK_EQ_U64(d.nready, 4);
	CHECK(doc_first_error(&d) == NULL);
	for (size_t i = 0; i < 4; i++) {
		CHECK_STR(d.s[i].spec, specs[i]);
		check_same_plan(&d, i);
	}
	/* strip never worse than the baselines it starts from. */
	CHECK(d.s[0].peak <= d.s[1].peak && d.s[0].peak <= d.s[3].peak);
	CHECK(!doc_planning(&d, &slot, &ms));
	doc_finish(&d);
	CHECK(all_freed());
}

static void without_specs_the_default_set_is_planned_in_registry_order(void)
{
	struct doc d = {0};
	struct as_diag diag = {0};
	CHECK(doc_load(&d, small_csv, NULL, 0, NULL, &diag) == AS_OK);
	doc_wait(&d, SIZE_MAX);
	size_t k = 0;
	for (size_t i = 0; i < as_strategy_count(); i++) {
		const char *name = as_strategy_at(i)->name;
		if (!as_strategy_by_default(name, d.t))
			continue;
		CHECK(k < d.ns);
		if (k < d.ns)
			CHECK_STR(d.s[k].spec, name);
		k++;
	}
	CHECK_EQ_U64(k, d.ns);
	CHECK_EQ_U64(d.nready, d.ns);
	for (size_t i = 0; i < d.ns; i++)
		CHECK(d.s[i].plan && d.s[i].report.valid);
	doc_finish(&d);
	CHECK(all_freed());
}

static void a_step_limit_leaves_the_baselines_out_in_their_slots(void)
{
	/* One step: every exact baseline stops; with -s and no limit, none. */
	const char *specs[] = {"bestfit", "bfc", "greedy-size"};
	struct doc d = {0};
	struct as_diag diag = {0};
	struct doc_opts o = {.limit_set = true, .step_limit = 1};
	CHECK(doc_load(&d, small_csv, specs, 3, &o, &diag) == AS_OK);
	doc_wait(&d, SIZE_MAX);
	CHECK(doc_left_out(&d.s[0]) && !d.s[0].plan);
	CHECK(d.s[1].plan && !doc_left_out(&d.s[1]));
	CHECK(doc_left_out(&d.s[2]));
	CHECK(doc_first_error(&d) == NULL); /* left out is no failure */
	doc_finish(&d);
	CHECK(doc_load(&d, small_csv, specs, 3, NULL, &diag) == AS_OK);
	doc_wait(&d, SIZE_MAX);
	for (size_t i = 0; i < d.ns; i++)
		CHECK(d.s[i].plan && !doc_left_out(&d.s[i]));
	doc_finish(&d);
	CHECK(all_freed());
}

static void a_failing_strategy_reports_in_its_slot_and_keeps_the_others(void)
{
	const char *specs[] = {"bfc", "nosuch", "greedy-size:order=nope",
			       "greedy-size"};
	struct doc d = {0};
	struct as_diag diag = {0};
	CHECK(doc_load(&d, small_csv, specs, 4, NULL, &diag) == AS_OK);
	doc_wait(&d, SIZE_MAX);
	CHECK_EQ_U64(d.nready, 4);
	CHECK(d.s[0].plan && !d.s[0].err);
	CHECK(!d.s[1].plan && d.s[1].err < 0);
	CHECK(strstr(d.s[1].diag.msg, "nosuch") != NULL);
	CHECK(!d.s[2].plan && d.s[2].err < 0);
	CHECK(d.s[3].plan && !d.s[3].err);
	CHECK(doc_first_error(&d) == &d.s[1]);
	doc_finish(&d);
	CHECK(all_freed());
}

static void a_trace_that_fails_to_load_leaves_the_doc_alone(void)
{
	struct doc d = {0};
	struct as_diag diag = {0};
	char path[160];
	snprintf(path, sizeof(path), "%s/missing.csv", dir);
	CHECK(doc_load(&d, path, NULL, 0, NULL, &diag) < 0);
	CHECK(d.job == NULL && d.t == NULL);
	CHECK(diag.msg[0] != 0);
	doc_finish(&d); /* a zeroed doc */
	CHECK_EQ_U64(doc_live_jobs(), 0);
}

static void letting_go_of_a_held_doc_frees_it_without_planning_more(void)
{
	const char *specs[] = {"bfc", "greedy-size", "strip"};
	struct doc d = {0};
	struct as_diag diag = {0};
	struct doc_opts o = {.hold = true};
	CHECK(doc_load(&d, small_csv, specs, 3, &o, &diag) == AS_OK);
	doc_allow(&d, 1);
	doc_wait(&d, 1);
	CHECK_EQ_U64(d.nready, 1);
	doc_finish(&d); /* the thread waits: cancel wakes it, it frees */
	CHECK(d.job == NULL && d.t == NULL);
	CHECK(all_freed());
}

static void a_reload_while_planning_frees_the_old_doc_after_its_strategy(void)
{
	const char *specs[] = {"greedy-size", "bestfit", "greedy-breadth",
			       "strip"};
	struct doc old = {0}, n = {0};
	struct as_diag diag = {0};
	CHECK(doc_load(&old, big_csv, specs, 4, NULL, &diag) == AS_OK);
	/* Let go as soon as a strategy runs: the thread is inside it. */
	size_t slot;
	double ms;
	for (int i = 0; i < 6000 && !doc_planning(&old, &slot, &ms); i++)
		SDL_Delay(1);
	CHECK(doc_load(&n, big_csv, specs, 4, NULL, &diag) == AS_OK);
	doc_finish(&old);
	CHECK_EQ_U64(doc_live_jobs() >= 1, 1);
	doc_wait(&n, SIZE_MAX);
	CHECK_EQ_U64(n.nready, 4);
	check_same_plan(&n, 0);
	doc_finish(&n);
	CHECK(all_freed());
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/as-viewer-doc-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("1..0 # SKIP cannot make a temporary directory\n");
		return 0;
	}
	snprintf(small_csv, sizeof(small_csv), "%s/small.csv", dir);
	snprintf(big_csv, sizeof(big_csv), "%s/big.csv", dir);
	uint64_t seed = 20261124;
	printf("# seed %llu\n", (unsigned long long)seed);
	write_trace(small_csv, 300, seed);
	write_trace(big_csv, 3000, seed + 1);
	TEST_RUN(plans_arrive_in_their_spec_slots_cheapest_first_strip_last);
	TEST_RUN(without_specs_the_default_set_is_planned_in_registry_order);
	TEST_RUN(a_step_limit_leaves_the_baselines_out_in_their_slots);
	TEST_RUN(a_failing_strategy_reports_in_its_slot_and_keeps_the_others);
	TEST_RUN(a_trace_that_fails_to_load_leaves_the_doc_alone);
	TEST_RUN(letting_go_of_a_held_doc_frees_it_without_planning_more);
	TEST_RUN(a_reload_while_planning_frees_the_old_doc_after_its_strategy);
	unlink(small_csv);
	unlink(big_csv);
	rmdir(dir);
	return tap_done();
}
