/*
 * Tests of the numa trace section, numa-bundle (bundling, padding,
 * inheritance, the second pass) and numa-flat, and of every generated
 * instance validating under both.
 */
#include "allocscope/allocscope.h"
#include "allocscope/numa.h"
#include "tap.h"

#include <sys/wait.h>
#include <unistd.h>

static struct as_trace *parse(const char *json, struct as_diag *d)
{
	struct as_trace *t = NULL;
	struct as_diag local;
	if (!d)
		d = &local;
	memset(d, 0, sizeof(*d));
	if (as_trace_parse("test.json", json, strlen(json), "json", &t,
			   d) != AS_OK) {
		char buf[1024];
		if (d == &local)
			printf("#   parse failed: %s\n",
			       as_diag_text(d, buf, sizeof(buf)));
		return NULL;
	}
	return t;
}

static struct as_plan *run(const struct as_trace *t, const char *spec)
{
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	if (as_strategy_run(spec, t, NULL, &p, &d) != AS_OK) {
		char buf[1024];
		printf("#   %s failed: %s\n", spec,
		       as_diag_text(&d, buf, sizeof(buf)));
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
		char buf[1024];
		printf("#   invalid: %s\n",
		       as_violation_text(t, p, &r.first[0], buf, sizeof(buf)));
	}
	return r.valid;
}

static double stat(const struct as_plan *p, const char *key)
{
	for (uint32_t i = 0; i < p->nstats; i++)
		if (strcmp(p->stats[i].key, key) == 0)
			return p->stats[i].value;
	printf("#   no stat %s\n", key);
	return -1;
}

#define HEAD                                                             \
	"{\"format\": \"allocscope-trace\", \"version\": 1, \"numa\": "

/* One parent, 3 sub-tasks over 2 cores: core 0 runs sub-tasks 0 and 2. */
static const char one_parent[] = HEAD
	"{\"cores\": 2, \"capacity\": 4096, \"parents\": [\n"
	"{\"name\": \"p0\", \"subtasks\": 3, \"ops\": [\"a\", \"b\"],\n"
	" \"edges\": [\n"
	"  {\"name\": \"x\", \"to\": \"a\", \"volume\": [100, 200, 300]},\n"
	"  {\"name\": \"h\", \"from\": \"a\", \"to\": \"b\", \"volume\": 50},\n"
	"  {\"name\": \"y\", \"from\": \"b\", \"volume\": 10}]}]}}\n";

static void numa_trace_expands_into_one_block_per_sub_task_edge(void)
{
	struct as_trace *t = parse(one_parent, NULL);
	CHECK(t != NULL);
	if (!t)
		return;
	const struct as_numa *nm = t->numa;
	CHECK(nm != NULL);
	CHECK_EQ_U64(t->nbuffers, 9);
	CHECK_EQ_U64(t->nspaces, 2);
	CHECK_STR(t->spaces[0].name, "core0");
	CHECK_STR(t->spaces[1].name, "core1");
	CHECK_EQ_U64(t->spaces[1].capacity, 4096);
	CHECK_EQ_U64(nm->ncores, 2);
	CHECK_EQ_U64(nm->nparents, 1);
	CHECK_STR(nm->schedule, "round-robin");
	CHECK_EQ_U64(nm->core[0], 0);
	CHECK_EQ_U64(nm->core[1], 1);
	CHECK_EQ_U64(nm->core[2], 0);
	CHECK_EQ_U64(nm->slot[2], 1);
	CHECK_EQ_U64(nm->parents[0].duration, 4); /* 2 slots x 2 ops */
	/* Sub-task 2 runs second on core 0: its steps are 2 and 3. */
	const struct as_buffer *x2 = &t->buffers[as_numa_block(
		&nm->parents[0], 2, 0)];
	CHECK_STR(x2->name, "p0/x/2");
	CHECK_EQ_U64(x2->size, 300);
	CHECK_EQ_U64(x2->space, 0);
	CHECK_EQ_U64(x2->start, 2);
	CHECK_EQ_U64(x2->end, 3); /* loaded for a, dead after a */
	const struct as_buffer *h2 = &t->buffers[as_numa_block(
		&nm->parents[0], 2, 1)];
	CHECK_EQ_U64(h2->start, 2);
	CHECK_EQ_U64(h2->end, 4);
	const struct as_buffer *y1 = &t->buffers[as_numa_block(
		&nm->parents[0], 1, 2)];
	CHECK_EQ_U64(y1->space, 1);
	CHECK_EQ_U64(y1->start, 1);
	CHECK_EQ_U64(y1->end, 2); /* stored at the end of the sub-task */
	as_trace_destroy(t);
}

static void block_bundles_are_analysed_instead_of_blocks(void)
{
	struct as_trace *t = parse(one_parent, NULL);
	if (!t)
		return;
	struct as_plan *b = run(t, "numa-bundle");
	struct as_plan *f = run(t, "numa-flat");
	CHECK(b && f);
	if (b && f) {
		/* Two task bundles (one per core) of three bundles each. */
		CHECK_EQ_U64(stat(b, "objects_analysed"), 6);
		CHECK_EQ_U64(stat(b, "task_bundles"), 2);
		CHECK_EQ_U64(stat(b, "blocks"), 9);
		CHECK_EQ_U64(stat(f, "objects_analysed"), 9);
		CHECK(valid(t, b));
		CHECK(valid(t, f));
		CHECK(b->space != NULL && b->space_capacity != NULL);
		CHECK_EQ_U64(b->space_capacity[1], 4096);
	}
	as_plan_destroy(b);
	as_plan_destroy(f);
	as_trace_destroy(t);
}

static void members_inherit_their_bundle_address(void)
{
	struct as_trace *t = parse(one_parent, NULL);
	if (!t)
		return;
	struct as_plan *b = run(t, "numa-bundle");
	if (b) {
		const struct as_numa_parent *pa = &t->numa->parents[0];
		for (uint32_t e = 0; e < 3; e++)
			CHECK_EQ_U64(b->offset[as_numa_block(pa, 0, e)],
				     b->offset[as_numa_block(pa, 2, e)]);
		/* Sub-task 1 is alone on core 1: its bundles are its blocks. */
		CHECK_EQ_U64(b->space[as_numa_block(pa, 1, 0)], 1);
	}
	as_plan_destroy(b);
	as_trace_destroy(t);
}

static void smaller_blocks_are_padded_up_to_their_bundle(void)
{
	struct as_trace *t = parse(one_parent, NULL);
	if (!t)
		return;
	struct as_plan *b = run(t, "numa-bundle");
	if (b) {
		/* x on core 0: bundle 300, member of 100 pads 200 bytes. */
		CHECK_EQ_U64(stat(b, "padding_bytes"), 200);
		const struct as_numa_parent *pa = &t->numa->parents[0];
		uint64_t x = b->offset[as_numa_block(pa, 0, 0)];
		uint64_t h = b->offset[as_numa_block(pa, 0, 1)];
		/* h lives with x: it stays clear of the whole bundle of x. */
		CHECK(h >= x + 300 || h + 50 <= x);
		CHECK(valid(t, b));
	}
	as_plan_destroy(b);
	as_trace_destroy(t);
}

/* Two parents; c reads p's output. `caps` and the schedule vary. */
static char two_parents[2048];

static const char *chain(const char *capacity, const char *extra)
{
	snprintf(two_parents, sizeof(two_parents),
		 HEAD "{\"cores\": 2, \"capacity\": %s, \"parents\": [\n"
		      "{\"name\": \"p\", \"subtasks\": 4, \"ops\": 2, "
		      "\"edges\": [\n"
		      " {\"name\": \"x\", \"to\": 0, \"volume\": 64},\n"
		      " {\"name\": \"h\", \"from\": 0, \"to\": 1, \"volume\": "
		      "128},\n"
		      " {\"name\": \"y\", \"from\": 1, \"volume\": [64, 64, "
		      "64, 32]}]},\n"
		      "%s"
		      "{\"name\": \"c\", \"subtasks\": 4, \"ops\": 1, "
		      "\"edges\": [\n"
		      " {\"name\": \"x\", \"source\": \"p/y\", \"to\": 0, "
		      "\"volume\": [64, 64, 64, 32]},\n"
		      " {\"name\": \"y\", \"from\": 0, \"volume\": 64}]}]}}\n",
		 capacity, extra);
	return two_parents;
}

static void second_pass_keeps_data_between_consecutive_parents_on_chip(void)
{
	struct as_trace *t = parse(chain("1024", ""), NULL);
	if (!t)
		return;
	struct as_plan *k = run(t, "numa-bundle");
	struct as_plan *n = run(t, "numa-bundle:keep=0");
	CHECK(k && n);
	if (k && n) {
		CHECK_EQ_U64(stat(k, "round_trips"), 4);
		CHECK_EQ_U64(stat(k, "round_trips_avoided"), 4);
		CHECK_EQ_U64(stat(k, "bytes_kept_on_chip"), 64 * 3 + 32);
		CHECK_EQ_U64(stat(n, "round_trips_avoided"), 0);
		const struct as_numa_parent *p = &t->numa->parents[0];
		const struct as_numa_parent *c = &t->numa->parents[1];
		for (uint32_t s = 0; s < 4; s++) {
			uint32_t prod = as_numa_block(p, s, 2);
			uint32_t cons = as_numa_block(c, s, 0);
			CHECK(k->alias_of != NULL &&
			      k->alias_of[cons] == prod);
			CHECK_EQ_U64(k->offset[cons], k->offset[prod]);
		}
		/* The validator keeps each producer live until its consumer
		 * ends, so this proves nothing overwrote the data. */
		CHECK(valid(t, k));
		CHECK(valid(t, n));
		CHECK(n->alias_of == NULL);
		/* Keeping costs memory: the carry zone above the bundles. */
		CHECK(as_plan_peak(k, t, -1) > as_plan_peak(n, t, -1));
	}
	as_plan_destroy(k);
	as_plan_destroy(n);
	as_trace_destroy(t);
}

static void second_pass_keeps_only_what_fits_in_the_core(void)
{
	/* Bundles need 192 bytes; room for one kept block of 64 per core. */
	struct as_trace *t = parse(chain("256", ""), NULL);
	if (!t)
		return;
	struct as_plan *k = run(t, "numa-bundle");
	if (k) {
		CHECK_EQ_U64(stat(k, "round_trips_avoided"), 2);
		CHECK(as_plan_peak(k, t, 0) <= 256);
		CHECK(as_plan_peak(k, t, 1) <= 256);
		CHECK(valid(t, k));
	}
	as_plan_destroy(k);
	as_trace_destroy(t);
}

static void carry_option_bounds_the_bytes_kept_per_core(void)
{
	struct as_trace *t = parse(chain("1024", ""), NULL);
	if (!t)
		return;
	struct as_plan *k = run(t, "numa-bundle:carry=64");
	if (k) {
		CHECK_EQ_U64(stat(k, "round_trips_avoided"), 2);
		CHECK(valid(t, k));
	}
	as_plan_destroy(k);
	as_trace_destroy(t);
}

static void second_pass_needs_the_parents_to_be_consecutive_on_the_core(void)
{
	/* "mid" runs on core 0 between p and c: core 0 round-trips. */
	struct as_trace *t = parse(
		chain("1024", "{\"name\": \"mid\", \"subtasks\": 1, \"ops\": "
			      "1, \"edges\": [{\"to\": 0, \"volume\": 8}]},\n"),
		NULL);
	if (!t)
		return;
	struct as_plan *k = run(t, "numa-bundle");
	if (k) {
		CHECK_EQ_U64(stat(k, "round_trips_avoided"), 2); /* core 1 */
		CHECK(valid(t, k));
	}
	as_plan_destroy(k);
	as_trace_destroy(t);
}

static void least_loaded_schedule_sends_each_sub_task_to_the_emptiest_core(void)
{
	struct as_trace *t = parse(
		HEAD "{\"cores\": 2, \"schedule\": \"least-loaded\", "
		     "\"parents\": [{\"subtasks\": 3, \"ops\": 1, \"edges\": "
		     "[{\"to\": 0, \"volume\": [300, 100, 100]}]}]}}",
		NULL);
	if (!t)
		return;
	CHECK_STR(t->numa->schedule, "least-loaded");
	CHECK_EQ_U64(t->numa->core[0], 0);
	CHECK_EQ_U64(t->numa->core[1], 1);
	CHECK_EQ_U64(t->numa->core[2], 1);
	CHECK_EQ_U64(t->numa->slot[2], 1);
	as_trace_destroy(t);
}

static void a_given_schedule_is_followed(void)
{
	struct as_trace *t = parse(
		HEAD "{\"cores\": 3, \"parents\": [{\"subtasks\": 3, \"ops\": "
		     "1, \"cores\": [2, 2, 0], \"edges\": [{\"to\": 0, "
		     "\"volume\": 8}]}]}}",
		NULL);
	if (!t)
		return;
	CHECK_STR(t->numa->schedule, "given");
	CHECK_EQ_U64(t->buffers[1].space, 2);
	CHECK_EQ_U64(t->buffers[1].start, 1);
	CHECK_EQ_U64(t->buffers[2].space, 0);
	as_trace_destroy(t);
}

static void bad_numa_traces_get_a_clear_error_with_a_line(void)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
		{HEAD "{\"cores\": 0, \"parents\": [{\"subtasks\": 1, "
		      "\"ops\": 1, \"edges\": [{\"to\": 0, \"volume\": 1}]}]}}",
		 "numa.cores: 0 is out of range [1, 4096]"},
		{HEAD "{\"cores\": 2, \"parents\": []}}",
		 "expected at least one parent"},
		{HEAD "{\"cores\": 2, \"parents\": [{\"subtasks\": 2, \"ops\": "
		      "1,\n\"edges\": [{\"to\": 0, \"volume\": [1, 2, 3]}]}]}}",
		 "numa.parents[0].edges[0].volume: 3 volumes for 2 sub-tasks"},
		{HEAD "{\"cores\": 2, \"parents\": [{\"subtasks\": 1, \"ops\": "
		      "2, \"edges\": [{\"from\": 1, \"to\": 0, \"volume\": "
		      "1}]}]}}",
		 "does not come after"},
		{HEAD "{\"cores\": 2, \"parents\": [{\"subtasks\": 1, \"ops\": "
		      "[\"a\"], \"edges\": [{\"to\": \"zz\", \"volume\": "
		      "1}]}]}}",
		 "unknown operator 'zz'"},
		{HEAD "{\"cores\": 2, \"parents\": [{\"subtasks\": 1, \"ops\": "
		      "1, \"edges\": [{\"to\": 0, \"volume\": -5}]}]}}",
		 "non-negative integer"},
		{HEAD "{\"cores\": 2, \"parents\": [{\"name\": \"a\", "
		      "\"subtasks\": 1, \"ops\": 2, \"edges\": [{\"name\": "
		      "\"h\", \"from\": 0, \"to\": 1, \"volume\": 1}]}, "
		      "{\"subtasks\": 1, \"ops\": 1, \"edges\": [{\"source\": "
		      "\"a/h\", \"to\": 0, \"volume\": 1}]}]}}",
		 "is not an output edge"},
		{HEAD "{\"cores\": 2, \"parents\": [{\"subtasks\": 1, \"ops\": "
		      "1, \"edges\": [{\"source\": \"nope/y\", \"to\": 0, "
		      "\"volume\": 1}]}]}}",
		 "no earlier parent named 'nope'"},
		{HEAD "{\"cores\": 2, \"parents\": [{\"subtasks\": 2, \"ops\": "
		      "1, \"cores\": [0, 5], \"edges\": [{\"to\": 0, "
		      "\"volume\": 1}]}]}}",
		 "5 is out of range [0, 1]"},
		{HEAD "{\"cores\": 2, \"schedule\": \"random\", \"parents\": "
		      "[{\"subtasks\": 1, \"ops\": 1, \"edges\": [{\"to\": 0, "
		      "\"volume\": 1}]}]}}",
		 "unknown schedule 'random'"},
		{HEAD "{\"cores\": 1, \"parents\": [{\"subtasks\": 1, \"ops\": "
		      "1, \"edges\": [{\"volume\": 1}]}]}}",
		 "an edge needs \"from\" or \"to\""},
		{"{\"format\": \"allocscope-trace\", \"version\": 1, "
		 "\"events\": [], \"numa\": {}}",
		 "a numa trace has no \"events\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct as_diag d;
		struct as_trace *t = parse(cases[i].json, &d);
		CHECK(t == NULL);
		as_trace_destroy(t);
		if (!strstr(d.msg, cases[i].msg)) {
			printf("#   case %zu: '%s' lacks '%s'\n", i, d.msg,
			       cases[i].msg);
			tap_cur_failed = 1;
		}
		CHECK(d.line >= 1);
	}
}

static void numa_strategies_refuse_traces_without_numa_data(void)
{
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	const char *ops = "alloc a 10\nfree a\n";
	CHECK(as_trace_parse("t.ops", ops, strlen(ops), "ops", &t, &d) ==
	      AS_OK);
	if (!t)
		return;
	CHECK(!as_strategy_applies("numa-bundle", t));
	CHECK(!as_strategy_applies("numa-flat", t));
	struct as_plan *p = NULL;
	CHECK(as_strategy_run("numa-bundle", t, NULL, &p, &d) ==
	      AS_EUNSUPPORTED);
	CHECK(strstr(d.msg, "numa-bundle") != NULL);
	CHECK(p == NULL);
	as_trace_destroy(t);
}

static void numa_bundle_rejects_unknown_and_out_of_range_options(void)
{
	struct as_trace *t = parse(one_parent, NULL);
	if (!t)
		return;
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	CHECK(as_strategy_run("numa-bundle:keep=2", t, NULL, &p, &d) ==
	      AS_EINVAL);
	CHECK(strstr(d.msg, "keep") != NULL);
	CHECK(as_strategy_run("numa-bundle:spread=1", t, NULL, &p, &d) ==
	      AS_ENOTFOUND);
	CHECK(strstr(d.msg, "spread") != NULL);
	CHECK(as_strategy_run("numa-bundle:carry=-1", t, NULL, &p, &d) ==
	      AS_EINVAL);
	CHECK(as_strategy_run("numa-flat:keep=1", t, NULL, &p, &d) ==
	      AS_ENOTFOUND);
	CHECK(p == NULL);
	as_trace_destroy(t);
}

/* Exit status of the CLI on `args` (a shell fragment), -1 when absent. */
static int cli(const char *args)
{
	const char *exe = getenv("AS_EXE");
	char cmd[2048];
	if (!exe)
		return -1;
	snprintf(cmd, sizeof(cmd), "'%s' %s >/dev/null 2>&1", exe, args);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void cli_exits_2_on_traces_and_options_numa_strategies_refuse(void)
{
	char ops[] = "/tmp/as_numa_ops_XXXXXX";
	int fd = mkstemp(ops);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, "alloc a 10\nfree a\n", 18) == 18);
	close(fd);
	char args[1024];
	snprintf(args, sizeof(args), "replay -f ops '%s' -s numa-bundle", ops);
	CHECK(cli(args) == 2);
	snprintf(args, sizeof(args), "replay -f ops '%s' -s numa-flat", ops);
	CHECK(cli(args) == 2);
	snprintf(args, sizeof(args), "replay -f ops '%s'", ops);
	CHECK(cli(args) == 0); /* without -s the numa strategies are skipped */
	unlink(ops);
	const char *src = getenv("AS_SOURCE_DIR");
	if (!src)
		src = ".";
	snprintf(args, sizeof(args),
		 "replay '%s/traces/numa-small.json' -s numa-bundle:keep=3", src);
	CHECK(cli(args) == 2);
	snprintf(args, sizeof(args), "replay '%s/traces/numa-small.json'", src);
	CHECK(cli(args) == 0);
	snprintf(args, sizeof(args), "replay '%s/traces/numa-ragged.json'", src);
	CHECK(cli(args) == 0);
}

/* Generate with tests/bench/numa_gen into a temporary file and load it. */
static struct as_trace *generated(uint32_t cores, uint64_t blocks,
				  uint64_t seed, const char *extra)
{
	const char *gen = getenv("AS_NUMA_GEN");
	char path[] = "/tmp/as_numa_XXXXXX";
	int fd = mkstemp(path);
	if (!gen || fd < 0) {
		printf("#   no generator (AS_NUMA_GEN) or temporary file\n");
		return NULL;
	}
	close(fd);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "'%s' --cores %u --blocks %" PRIu64 " --seed %" PRIu64
		 " %s -o '%s'",
		 gen, cores, blocks, seed, extra, path);
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	if (system(cmd) != 0) {
		printf("#   failed: %s\n", cmd);
	} else if (as_trace_load(path, NULL, &t, &d) != AS_OK) {
		char buf[1024];
		printf("#   %s\n", as_diag_text(&d, buf, sizeof(buf)));
	}
	unlink(path);
	return t;
}

static void every_generated_instance_validates_under_both_strategies(void)
{
	static const uint32_t cores[] = {8, 37, 256};
	static const char *const extra[] = {"", "--ragged 1 --per-core 1:4",
					    "--ragged 0"};
	static const char *const specs[] = {"numa-flat", "numa-bundle:keep=0",
					    "numa-bundle"};
	for (uint64_t seed = 1; seed <= 3; seed++)
		for (int ci = 0; ci < 3; ci++) {
			struct as_trace *t = generated(cores[ci], 15000, seed,
						       extra[seed - 1]);
			CHECK(t != NULL);
			if (!t)
				continue;
			double flat_objects = 0;
			for (int s = 0; s < 3; s++) {
				struct as_plan *p = run(t, specs[s]);
				CHECK(p != NULL);
				if (!p)
					continue;
				if (!valid(t, p)) {
					printf("#   seed %" PRIu64 ", %u cores, "
					       "%s\n",
					       seed, cores[ci], specs[s]);
					tap_cur_failed = 1;
				}
				CHECK_EQ_U64(as_plan_failed(p, t), 0);
				if (s == 0)
					flat_objects =
						stat(p, "objects_analysed");
				if (s == 1 || s == 2)
					CHECK(stat(p, "objects_analysed") <
					      flat_objects);
				as_plan_destroy(p);
			}
			as_trace_destroy(t);
		}
}

static void generated_instances_with_tight_capacity_keep_less(void)
{
	struct as_trace *t = generated(16, 20000, 7, "");
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_plan *wide = run(t, "numa-bundle");
	as_trace_destroy(t);
	/* The same instance, with room for the bundles but barely more. */
	t = generated(16, 20000, 7, "--capacity 200000");
	struct as_plan *tight = t ? run(t, "numa-bundle") : NULL;
	struct as_plan *flat = t ? run(t, "numa-flat") : NULL;
	CHECK(wide && tight && flat);
	if (wide && tight && flat) {
		CHECK(valid(t, tight));
		CHECK(valid(t, flat));
		CHECK(stat(tight, "round_trips_avoided") <
		      stat(wide, "round_trips_avoided"));
		CHECK(stat(tight, "core_peak_max") <= 200000);
	}
	as_plan_destroy(wide);
	as_plan_destroy(tight);
	as_plan_destroy(flat);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(numa_trace_expands_into_one_block_per_sub_task_edge);
	TEST_RUN(block_bundles_are_analysed_instead_of_blocks);
	TEST_RUN(members_inherit_their_bundle_address);
	TEST_RUN(smaller_blocks_are_padded_up_to_their_bundle);
	TEST_RUN(second_pass_keeps_data_between_consecutive_parents_on_chip);
	TEST_RUN(second_pass_keeps_only_what_fits_in_the_core);
	TEST_RUN(carry_option_bounds_the_bytes_kept_per_core);
	TEST_RUN(second_pass_needs_the_parents_to_be_consecutive_on_the_core);
	TEST_RUN(least_loaded_schedule_sends_each_sub_task_to_the_emptiest_core);
	TEST_RUN(a_given_schedule_is_followed);
	TEST_RUN(bad_numa_traces_get_a_clear_error_with_a_line);
	TEST_RUN(numa_strategies_refuse_traces_without_numa_data);
	TEST_RUN(numa_bundle_rejects_unknown_and_out_of_range_options);
	TEST_RUN(cli_exits_2_on_traces_and_options_numa_strategies_refuse);
	TEST_RUN(every_generated_instance_validates_under_both_strategies);
	TEST_RUN(generated_instances_with_tight_capacity_keep_less);
	return tap_done();
}
