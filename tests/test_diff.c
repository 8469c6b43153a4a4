/*
 * Results and comparisons (src/compare/results.c, replay_json.c, compare.c, the results
 * section of src/formats/json/parse_json.c): matching, thresholds, missing rows, invalid
 * plans, the verdict behind the exit status, and the Markdown report.
 */
#include <math.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allocscope/compare.h"
#include "allocscope/io.h"
#include "tap.h"

static struct as_results *set(void)
{
	struct as_results *r = as_results_create();
	if (!r) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	return r;
}

/* Whether a result file reads into r with exactly `rows` rows. */
static bool reads(struct as_results *r, const char *name, const char *text,
		  size_t rows)
{
	struct as_diag d;
	CHECK(as_results_parse(r, name, text, strlen(text), &d) == AS_OK);
	CHECK_EQ_U64(r->nrows, rows);
	return r->nrows == rows;
}

static void row(struct as_results *r, const char *trace, const char *strat,
		uint64_t peak, uint64_t lb, bool valid, uint64_t failed,
		double ms)
{
	struct as_result_row x = {
		.trace = trace, .strategy = strat, .peak = peak,
		.lower_bound = lb, .valid = valid, .failed = failed,
		.plan_ms = ms, .violations = valid ? 0 : 3,
		.overlaps = valid ? 0 : 3,
	};
	x.peak_vs_lb = lb ? (double)peak / (double)lb : 0;
	if (as_results_add(r, &x) != AS_OK) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
}

static struct as_comparison *cmp(struct as_results *a, struct as_results *b,
				 const struct as_compare_options *o)
{
	struct as_comparison *c = NULL;
	int err = as_compare(a, b, o, &c);
	CHECK(err == AS_OK);
	CHECK(c != NULL);
	return c;
}

/* The row of c whose (base or new) trace and strategy are these. */
static const struct as_compare_row *find(const struct as_comparison *c,
					 const char *trace, const char *strat)
{
	for (size_t i = 0; i < c->nrows; i++) {
		const struct as_result_row *x =
			c->rows[i].base ? c->rows[i].base : c->rows[i].new_;
		if (strcmp(x->trace, trace) == 0 &&
		    strcmp(x->strategy, strat) == 0)
			return &c->rows[i];
	}
	printf("#   no row %s %s\n", trace, strat);
	tap_cur_failed = 1;
	static const struct as_compare_row none;
	return &none;
}

static void rows_match_by_trace_and_strategy(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "t/x.ops", "greedy-size", 100, 100, true, 0, 1);
	row(a, "t/x.ops", "bfc", 120, 100, true, 0, 1);
	row(a, "t/y.ops", "greedy-size", 50, 40, true, 0, 1);
	/* NEW lists them in another order */
	row(b, "t/y.ops", "greedy-size", 50, 40, true, 0, 1);
	row(b, "t/x.ops", "bfc", 110, 100, true, 0, 1);
	row(b, "t/x.ops", "greedy-size", 100, 100, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK_EQ_U64(c->nrows, 3);
	const struct as_compare_row *r = find(c, "t/x.ops", "bfc");
	CHECK(r->base && r->new_);
	CHECK_EQ_U64(r->new_->peak, 110);
	CHECK(r->status == AS_CH_BETTER);
	CHECK(find(c, "t/y.ops", "greedy-size")->status == AS_CH_SAME);
	CHECK(!as_comparison_failed(c));
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void rows_match_by_file_name_when_directories_differ(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "traces/x.ops", "greedy-size", 100, 100, true, 0, 1);
	row(b, "/home/ci/src/traces/x.ops", "greedy-size", 130, 100, true, 0,
	    1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK_EQ_U64(c->nrows, 1);
	CHECK(c->rows[0].base && c->rows[0].new_);
	CHECK(c->rows[0].status == AS_CH_REGRESSED);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void ambiguous_file_names_are_not_matched(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "a/x.ops", "greedy-size", 100, 100, true, 0, 1);
	row(a, "b/x.ops", "greedy-size", 100, 100, true, 0, 1);
	row(b, "c/x.ops", "greedy-size", 100, 100, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK_EQ_U64(c->nrows, 3);
	CHECK_EQ_U64(c->count[AS_CH_ONLY_BASE], 2);
	CHECK_EQ_U64(c->count[AS_CH_ONLY_NEW], 1);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void repeated_keys_match_in_order(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 10, 10, true, 0, 1);
	row(a, "x.ops", "s", 20, 10, true, 0, 1);
	row(b, "x.ops", "s", 10, 10, true, 0, 1);
	row(b, "x.ops", "s", 25, 10, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK_EQ_U64(c->nrows, 2);
	CHECK(c->rows[0].status == AS_CH_SAME);
	CHECK(c->rows[1].status == AS_CH_REGRESSED);
	CHECK_EQ_U64(c->rows[1].base->peak, 20);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void any_growth_regresses_with_the_default_threshold(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 1000000, 1000000, true, 0, 1);
	row(b, "x.ops", "s", 1000001, 1000000, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK(c->rows[0].status == AS_CH_REGRESSED);
	CHECK(as_comparison_failed(c));
	CHECK_EQ_U64(c->nfailing, 1);
	CHECK(fabs(c->rows[0].change - 1.0) < 1e-9);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void one_byte_more_on_a_huge_peak_still_regresses(void)
{
	struct as_results *a = set(), *b = set();
	uint64_t big = (uint64_t)1 << 60;
	row(a, "x.ops", "s", big, big, true, 0, 1);
	row(b, "x.ops", "s", big + 1, big, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK(c->rows[0].status == AS_CH_REGRESSED);
	CHECK(c->rows[0].change == 1.0);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void growth_within_max_regress_is_worse_but_passes(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 1000, 1000, true, 0, 1);
	row(a, "y.ops", "s", 1000, 1000, true, 0, 1);
	row(b, "x.ops", "s", 1050, 1000, true, 0, 1);  /* +5% */
	row(b, "y.ops", "s", 1051, 1000, true, 0, 1);  /* +5.1% */
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.max_regress_pct = 5;
	struct as_comparison *c = cmp(a, b, &o);
	CHECK(find(c, "x.ops", "s")->status == AS_CH_WORSE);
	CHECK(find(c, "y.ops", "s")->status == AS_CH_REGRESSED);
	CHECK(fabs(find(c, "y.ops", "s")->change_pct - 5.1) < 1e-9);
	CHECK_EQ_U64(c->nfailing, 1);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void missing_rows_are_reported_on_both_sides_without_failing(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "old-strategy", 10, 10, true, 0, 1);
	row(a, "x.ops", "s", 10, 10, true, 0, 1);
	row(b, "x.ops", "s", 10, 10, true, 0, 1);
	row(b, "x.ops", "new-strategy", 10, 10, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK_EQ_U64(c->nrows, 3);
	CHECK(find(c, "x.ops", "old-strategy")->status == AS_CH_ONLY_BASE);
	CHECK(find(c, "x.ops", "old-strategy")->new_ == NULL);
	CHECK(find(c, "x.ops", "new-strategy")->status == AS_CH_ONLY_NEW);
	CHECK(find(c, "x.ops", "new-strategy")->base == NULL);
	CHECK(!as_comparison_failed(c));
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void missing_fails_makes_rows_missing_from_new_fail(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "old-strategy", 10, 10, true, 0, 1);
	row(b, "x.ops", "new-strategy", 10, 10, true, 0, 1);
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.missing_fails = true;
	struct as_comparison *c = cmp(a, b, &o);
	CHECK(as_comparison_failed(c));
	CHECK_EQ_U64(c->nfailing, 1); /* only-in-new never fails */
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

/* A strategy replay left out at its step limit: a row with no plan. */
static void left_out(struct as_results *r, const char *trace,
		     const char *strat)
{
	struct as_result_row x = {.trace = trace, .strategy = strat,
				  .valid = true, .left_out = true};
	if (as_results_add(r, &x) != AS_OK) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
}

static void a_strategy_left_out_at_the_step_limit_is_named_not_compared(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "bestfit", 100, 10, true, 0, 1);
	row(a, "x.ops", "greedy-size", 100, 10, true, 0, 1);
	left_out(a, "x.ops", "greedy-breadth");
	left_out(a, "x.ops", "strip");
	left_out(b, "x.ops", "bestfit");
	row(b, "x.ops", "greedy-size", 100, 10, true, 0, 1);
	row(b, "x.ops", "greedy-breadth", 100, 10, true, 0, 1);
	left_out(b, "x.ops", "strip");
	struct as_comparison *c = cmp(a, b, NULL);
	const struct as_compare_row *bf = find(c, "x.ops", "bestfit");
	CHECK(bf->status == AS_CH_LEFT_OUT_NEW);
	CHECK(bf->base != NULL && bf->new_ != NULL);
	CHECK(!as_compare_row_paired(bf));
	CHECK(find(c, "x.ops", "greedy-breadth")->status ==
	      AS_CH_LEFT_OUT_BASE);
	CHECK(find(c, "x.ops", "greedy-size")->status == AS_CH_SAME);
	CHECK(find(c, "x.ops", "strip")->status == AS_CH_LEFT_OUT_NEW);
	char buf[48];
	CHECK_STR(as_compare_value(c, bf, true, buf, sizeof(buf)), "left out");
	CHECK_STR(as_compare_value(c, bf, false, buf, sizeof(buf)), "100");
	CHECK(!as_comparison_failed(c));
	as_comparison_destroy(c);

	/* With --fail-missing only a plan BASE had and NEW lacks fails. */
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.missing_fails = true;
	c = cmp(a, b, &o);
	CHECK(as_compare_row_fails(c, find(c, "x.ops", "bestfit")));
	CHECK(!as_compare_row_fails(c, find(c, "x.ops", "strip")));
	CHECK(!as_compare_row_fails(c, find(c, "x.ops", "greedy-breadth")));
	CHECK_EQ_U64(c->nfailing, 1);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void a_plan_that_became_invalid_fails_even_when_smaller(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 100, 10, true, 0, 1);
	row(b, "x.ops", "s", 10, 10, false, 0, 1);
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.max_regress_pct = 1000;
	struct as_comparison *c = cmp(a, b, &o);
	CHECK(c->rows[0].status == AS_CH_INVALID);
	CHECK(as_comparison_failed(c));
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void an_invalid_base_plan_made_valid_is_fixed(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 10, 10, false, 0, 1);
	row(b, "x.ops", "s", 12, 10, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK(c->rows[0].status == AS_CH_FIXED);
	CHECK(!as_comparison_failed(c));
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void a_smaller_peak_with_more_failed_allocations_fails(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "bfc", 100, 100, true, 0, 1);
	row(b, "x.ops", "bfc", 80, 100, true, 2, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK(c->rows[0].status == AS_CH_MORE_FAILED);
	CHECK(as_comparison_failed(c));
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void failed_metric_growing_from_zero_is_an_infinite_change(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "bfc", 100, 100, true, 0, 1);
	row(b, "x.ops", "bfc", 100, 100, true, 1, 1);
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.metric = AS_METRIC_FAILED;
	o.max_regress_pct = 50;
	struct as_comparison *c = cmp(a, b, &o);
	CHECK(c->rows[0].pct_infinite);
	CHECK(c->rows[0].status == AS_CH_REGRESSED);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void timing_changes_within_the_noise_allowance_are_the_same(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 1, 1, true, 0, 0.10);
	row(a, "y.ops", "s", 1, 1, true, 0, 100.0);
	row(a, "z.ops", "s", 1, 1, true, 0, 100.0);
	row(b, "x.ops", "s", 1, 1, true, 0, 1.90);   /* +1800%, +1.8 ms */
	row(b, "y.ops", "s", 1, 1, true, 0, 109.0);  /* +9%: default is 10 */
	row(b, "z.ops", "s", 1, 1, true, 0, 111.0);  /* +11%, +11 ms */
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.metric = AS_METRIC_PLAN_MS;
	struct as_comparison *c = cmp(a, b, &o);
	CHECK(fabs(c->opts.max_regress_pct - 10.0) < 1e-9);
	CHECK(fabs(c->opts.noise_ms - 2.0) < 1e-9);
	CHECK(find(c, "x.ops", "s")->status == AS_CH_SAME);
	CHECK(find(c, "y.ops", "s")->status == AS_CH_WORSE);
	CHECK(find(c, "z.ops", "s")->status == AS_CH_REGRESSED);
	CHECK_EQ_U64(c->nfailing, 1);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void peak_vs_lb_is_computed_from_the_integers(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 300, 200, true, 0, 1);
	row(b, "x.ops", "s", 450, 200, true, 0, 1);
	a->rows[0].peak_vs_lb = 1.4;   /* as if rounded badly in a file */
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.metric = AS_METRIC_PEAK_VS_LB;
	struct as_comparison *c = cmp(a, b, &o);
	CHECK(fabs(c->rows[0].base_value - 1.5) < 1e-12);
	CHECK(fabs(c->rows[0].new_value - 2.25) < 1e-12);
	CHECK(c->rows[0].status == AS_CH_REGRESSED);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void an_edited_trace_is_reported_not_compared(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "lb.ops", "s", 100, 100, true, 0, 1);
	row(b, "lb.ops", "s", 200, 150, true, 0, 1);   /* lower bound moved */
	row(a, "n.ops", "s", 100, 100, true, 0, 1);
	row(b, "n.ops", "s", 120, 100, true, 0, 1);
	a->rows[1].buffers = 10;
	b->rows[1].buffers = 11;                        /* a buffer added */
	row(a, "x.ops", "s", 100, 100, true, 0, 1);
	row(b, "x.ops", "s", 100, 100, false, 0, 1);
	b->rows[2].lower_bound = 50;          /* changed, but invalid wins */
	struct as_comparison *c = cmp(a, b, NULL);
	CHECK(find(c, "lb.ops", "s")->status == AS_CH_TRACE_CHANGED);
	CHECK(find(c, "n.ops", "s")->status == AS_CH_TRACE_CHANGED);
	CHECK(find(c, "x.ops", "s")->status == AS_CH_INVALID);
	CHECK_EQ_U64(c->count[AS_CH_TRACE_CHANGED], 2);
	CHECK_EQ_U64(c->nfailing, 1);
	char *md = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&md, &len);
	if (f) {
		CHECK(as_comparison_write_markdown(c, f, false) == AS_OK);
		fclose(f);
		CHECK(strstr(md, "2 rows are of traces whose content changed") !=
		      NULL);
		CHECK(strstr(md, "| trace changed | `lb.ops`") != NULL);
		free(md);
	}
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void two_strategies_on_the_same_traces_match_by_trace(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "greedy-size", 100, 100, true, 0, 1);
	row(b, "x.ops", "recorded", 150, 100, true, 0, 1);
	struct as_compare_options o;
	as_compare_defaults(&o);
	o.by_trace_only = true;
	struct as_comparison *c = cmp(a, b, &o);
	CHECK_EQ_U64(c->nrows, 1);
	CHECK(c->rows[0].status == AS_CH_REGRESSED);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void metric_names_round_trip_and_unknown_ones_fail(void)
{
	const char *names[] = {"peak", "peak_vs_lb", "failed", "plan_ms"};
	for (int i = 0; i < 4; i++) {
		enum as_metric m;
		CHECK(as_metric_from_name(names[i], &m) == AS_OK);
		CHECK_STR(as_metric_name(m), names[i]);
	}
	enum as_metric m = AS_METRIC_PEAK;
	CHECK(as_metric_from_name("speed", &m) == AS_ENOTFOUND);
	CHECK(m == AS_METRIC_PEAK);
	CHECK(as_metric_is_timing(AS_METRIC_PLAN_MS));
	CHECK(!as_metric_is_timing(AS_METRIC_PEAK));
}

/* ---- Reading result files ---- */

static const char one_trace[] =
	"{\"trace\": {\"name\": \"traces/x.ops\", \"format\": \"ops\", "
	"\"events\": 4, \"buffers\": 2, \"lower_bound\": 64},\n"
	" \"results\": [\n"
	"  {\"strategy\": \"greedy-size\", \"peak\": 64, \"lower_bound\": 64, "
	"\"peak_vs_lb\": 1.0, \"valid\": true, \"overlaps\": 0, "
	"\"violations\": 0, \"failed\": 0, \"plan_ms\": 0.012, "
	"\"stats\": {}},\n"
	"  {\"strategy\": \"bfc:x=1\", \"peak\": \"96\", \"valid\": false, "
	"\"overlaps\": 1, \"violations\": 2, \"failed\": 1, \"plan_ms\": 3,"
	" \"stats\": {\"chunks\": 4}, \"first_violations\": [\"...\"]}\n"
	" ]}\n";

static void the_single_trace_shape_reads(void)
{
	struct as_results *r = set();
	bool ok = reads(r, "one.json", one_trace, 2);
	if (ok) {
		CHECK_STR(r->rows[0].trace, "traces/x.ops");
		CHECK_STR(r->rows[1].strategy, "bfc:x=1");
		CHECK_EQ_U64(r->rows[1].peak, 96);
		CHECK_EQ_U64(r->rows[1].lower_bound, 64); /* from the trace */
		CHECK_EQ_U64(r->rows[1].events, 4);
		CHECK_EQ_U64(r->rows[1].buffers, 2);
		CHECK(!r->rows[1].valid);
		CHECK_EQ_U64(r->rows[1].violations, 2);
		CHECK_EQ_U64(r->rows[1].failed, 1);
		CHECK(fabs(r->rows[0].plan_ms - 0.012) < 1e-12);
		CHECK(fabs(r->rows[1].peak_vs_lb - 1.5) < 1e-12);
	}
	as_results_destroy(r);
}

static void the_runs_shape_reads(void)
{
	static const char text[] =
		"{\"format\": \"allocscope-results\", \"version\": 1, "
		"\"runs\": [\n"
		"{\"trace\": {\"name\": \"a.ops\", \"lower_bound\": 1}, "
		"\"results\": [{\"strategy\": \"s\", \"peak\": 1, "
		"\"valid\": true}]},\n"
		"{\"trace\": {\"name\": \"b.ops\"}, \"results\": []},\n"
		"{\"trace\": {\"name\": \"c.ops\"}, \"results\": "
		"[{\"strategy\": \"s\", \"peak\": 7, \"valid\": true}]}\n"
		"]}\n";
	struct as_results *r = set();
	bool ok = reads(r, "runs.json", text, 2);
	if (ok) {
		CHECK_STR(r->rows[0].trace, "a.ops");
		CHECK_STR(r->rows[1].trace, "c.ops");
		CHECK_EQ_U64(r->rows[1].peak, 7);
	}
	as_results_destroy(r);
}

static void a_runs_left_out_member_reads_as_rows_without_plans(void)
{
	static const char text[] =
		"{\"trace\": {\"name\": \"a.csv\", \"lower_bound\": 5}, "
		"\"results\": [{\"strategy\": \"strip\", \"peak\": 5, "
		"\"valid\": true}],\n"
		"\"left_out\": {\"step_limit\": 50, \"strategies\": "
		"[\"greedy-size\", \"bestfit\"]}}\n";
	struct as_results *r = set();
	bool ok = reads(r, "lo.json", text, 3);
	if (ok) {
		CHECK(!r->rows[0].left_out);
		CHECK_STR(r->rows[1].strategy, "greedy-size");
		CHECK(r->rows[1].left_out && r->rows[2].left_out);
		CHECK_STR(r->rows[2].trace, "a.csv");
		CHECK_EQ_U64(r->rows[2].lower_bound, 5);
	}
	as_results_destroy(r);
}

static void peaks_above_2_to_the_53_read_exactly(void)
{
	static const char text[] =
		"{\"runs\": [{\"trace\": {\"name\": \"a\"}, \"results\": [\n"
		"{\"strategy\": \"s\", \"peak\": 18446744073709551615, "
		"\"lower_bound\": 9007199254740993, \"valid\": true}]}]}";
	struct as_results *r = set();
	bool ok = reads(r, "big.json", text, 1);
	if (ok) {
		CHECK_EQ_U64(r->rows[0].peak, UINT64_MAX);
		CHECK_EQ_U64(r->rows[0].lower_bound, 9007199254740993ULL);
	}
	as_results_destroy(r);
}

static void check_bad(const char *text, const char *want, uint64_t line)
{
	struct as_results *r = set();
	struct as_diag d;
	int err = as_results_parse(r, "bad.json", text, strlen(text), &d);
	char buf[1024];
	as_diag_text(&d, buf, sizeof(buf));
	CHECK(err == AS_EPARSE);
	CHECK_EQ_U64(r->nrows, 0); /* nothing appended from a bad file */
	if (!strstr(buf, want)) {
		printf("#   got '%s', want '%s'\n", buf, want);
		tap_cur_failed = 1;
	}
	CHECK_EQ_U64(d.line, line);
	as_results_destroy(r);
}

static void bad_result_files_name_the_problem_and_line(void)
{
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [\n"
		  "{\"strategy\": \"s\", \"peak\": 1, \"valid\": true},\n"
		  "{\"strategy\": \"s\", \"valid\": true}]}",
		  "bad.json:3: results[1]: missing field 'peak'", 3);
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [\n"
		  "{\"strategy\": \"s\",\n \"peak\": -5, \"valid\": true}]}",
		  "results[0].peak: expected a non-negative integer", 3);
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [\n"
		  "{\"strategy\": \"s\", \"peak\": 1e300, \"valid\": true}]}",
		  "results[0].peak: expected a non-negative integer", 2);
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [\n"
		  "{\"strategy\": \"s\", \"peak\": 18446744073709551616, "
		  "\"valid\": true}]}",
		  "results[0].peak: expected a non-negative integer (up to "
		  "2^64 - 1)", 2);
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [],\n"
		  "\"left_out\": {\"strategies\": [\"a\",\n 7]}}",
		  "left_out.strategies[1]: expected a strategy name", 3);
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [],\n"
		  "\"left_out\": {\"step_limit\": 5}}",
		  "left_out.strategies: expected an array", 2);
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [\n"
		  "{\"strategy\": \"s\", \"peak\": 1, \"valid\": \"yes\"}]}",
		  "results[0].valid: expected true or false", 2);
	check_bad("{\"trace\": {\"name\": \"x\"}, \"results\": [\n",
		  "truncated JSON", 2);
	check_bad("{\"format\": \"allocscope-trace\", \"version\": 1}",
		  "not an allocscope results file", 1);
	check_bad("{\"format\": \"allocscope-results\", \"version\": 2, "
		  "\"runs\": []}",
		  "unsupported results version", 1);
	check_bad("{\"runs\": [{\"trace\": {\"name\": \"a\"}}]}",
		  "runs[0]: missing field 'results'", 1);
	check_bad("[1, 2]", "expected a JSON object", 1);
}

/* Hostile input: every truncation and every one-byte corruption of a good
 * file either reads or fails with a parse error; nothing else happens. */
static void truncated_and_corrupted_files_fail_cleanly(void)
{
	size_t len = strlen(one_trace);
	size_t bad = 0;
	for (size_t cut = 0; cut + 1 < len; cut++) { /* all but "\n" */
		char *x = malloc(cut + 1);
		if (!x)
			continue;
		memcpy(x, one_trace, cut);
		struct as_results *r = set();
		struct as_diag d;
		int err = as_results_parse(r, "cut.json", x, cut, &d);
		free(x);
		bad += err != AS_EPARSE || r->nrows != 0;
		as_results_destroy(r);
	}
	static const char junk[] = "\"{}[],:-9e";
	for (size_t at = 0; at < len; at++) {
		for (const char *j = junk; *j; j++) {
			/* exactly len bytes: no NUL for the parser to lean on */
			char *x = malloc(len);
			if (!x)
				continue;
			memcpy(x, one_trace, len);
			x[at] = *j;
			struct as_results *r = set();
			struct as_diag d;
			int err = as_results_parse(r, "junk.json", x, len, &d);
			free(x);
			bad += err != AS_OK && err != AS_EPARSE;
			bad += err == AS_EPARSE && r->nrows != 0;
			as_results_destroy(r);
		}
	}
	CHECK_EQ_U64(bad, 0);
}

static void a_missing_file_is_an_io_error(void)
{
	struct as_results *r = set();
	struct as_diag d;
	CHECK(as_results_load(r, "/nonexistent/base.json", &d) == AS_EIO);
	CHECK_STR(d.file, "/nonexistent/base.json");
	as_results_destroy(r);
}

static void a_fifo_is_read_as_a_stream_and_a_directory_refused(void)
{
	char dir[] = "/tmp/as_test_diff.XXXXXX", fifo[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/in.json", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	/* A writer in a child; the alarm turns a hang into a failure. */
	fflush(stdout); /* the results so far stay in the log */
	alarm(10);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(fifo, O_WRONLY);
		ssize_t w = fd < 0 ? -1 : write(fd, one_trace, strlen(one_trace));
		_exit(w == (ssize_t)strlen(one_trace) ? 0 : 1);
	}
	CHECK(pid > 0);
	struct as_results *r = set();
	struct as_diag d;
	CHECK(as_results_load(r, fifo, &d) == AS_OK);
	CHECK(r->nrows > 0);
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
	      WIFEXITED(status) && WEXITSTATUS(status) == 0);
	as_results_destroy(r);
	r = set();
	CHECK(as_results_load(r, dir, &d) == AS_EIO);
	CHECK_STR(d.msg, "not a regular file but a directory");
	CHECK(as_results_load(r, "/dev/zero", &d) == AS_EIO);
	CHECK_STR(d.msg, "not a regular file but a character device");
	CHECK_EQ_U64(r->nrows, 0);
	alarm(0);
	as_results_destroy(r);
	unlink(fifo);
	rmdir(dir);
}

/* ---- Markdown ---- */

static char *markdown(const struct as_comparison *c, bool all)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	if (!f)
		return strdup("");
	CHECK(as_comparison_write_markdown(c, f, all) == AS_OK);
	fclose(f);
	return buf;
}

static void markdown_lists_regressions_first_and_counts_unchanged(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "better.ops", "s", 100, 100, true, 0, 1);
	row(a, "same.ops", "s", 100, 100, true, 0, 1);
	row(a, "small|regress.ops", "s", 100, 100, true, 0, 1);
	row(a, "big-regress.ops", "s", 100, 100, true, 0, 1);
	row(a, "gone.ops", "s", 100, 100, true, 0, 1);
	row(b, "better.ops", "s", 90, 100, true, 0, 1);
	row(b, "same.ops", "s", 100, 100, true, 0, 1);
	row(b, "small|regress.ops", "s", 101, 100, true, 0, 1);
	row(b, "big-regress.ops", "s", 150, 100, true, 0, 1);
	row(b, "added.ops", "s", 100, 100, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	char *md = markdown(c, false);
	const char *big = strstr(md, "`big-regress.ops`");
	const char *small = strstr(md, "`small\\|regress.ops`");
	const char *gone = strstr(md, "`gone.ops`");
	const char *added = strstr(md, "`added.ops`");
	const char *better = strstr(md, "`better.ops`");
	CHECK(strstr(md, "### allocscope diff (peak): ❌ regression") == md);
	CHECK(big && small && gone && added && better);
	CHECK(big < small && small < gone && gone < added && added < better);
	CHECK(strstr(md, "| **regressed** | `big-regress.ops` | s | 100 | 150"
			 " | +50 | +50.00% |") != NULL);
	CHECK(strstr(md, "| only in base | `gone.ops` | s | 100 | — |") !=
	      NULL);
	CHECK(strstr(md, "`same.ops`") == NULL);
	CHECK(strstr(md, "1 unchanged rows not shown.") != NULL);
	free(md);
	md = markdown(c, true);
	CHECK(strstr(md, "`same.ops`") != NULL);
	free(md);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void markdown_of_a_clean_comparison_says_so(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 100, 100, true, 0, 1);
	row(b, "x.ops", "s", 100, 100, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	char *md = markdown(c, false);
	CHECK(strstr(md, "✅ no regression") != NULL);
	CHECK(strstr(md, "| status |") == NULL);
	free(md);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void markdown_notes_invalid_plans_and_failed_allocations(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 100, 100, true, 0, 1);
	row(a, "y.ops", "bfc", 100, 100, true, 0, 1);
	row(b, "x.ops", "s", 100, 100, false, 0, 1);
	row(b, "y.ops", "bfc", 90, 100, true, 4, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	char *md = markdown(c, false);
	CHECK(strstr(md, "| **invalid** | `x.ops`") != NULL);
	CHECK(strstr(md, "invalid plan: 3 violations") != NULL);
	CHECK(strstr(md, "| **more failed** | `y.ops`") != NULL);
	CHECK(strstr(md, "failed 0 → 4") != NULL);
	free(md);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void the_text_and_markdown_reports_count_in_the_same_words(void)
{
	struct as_results *a = set(), *b = set();
	row(a, "x.ops", "s", 100, 100, true, 0, 1);
	row(b, "x.ops", "s", 150, 100, true, 0, 1);
	row(a, "y.ops", "s", 100, 100, true, 0, 1);
	row(b, "y.ops", "s", 100, 100, true, 0, 1);
	row(b, "z.ops", "s", 100, 100, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	char counts[640], tiny[12];
	as_comparison_counts(c, counts, sizeof(counts));
	CHECK_STR(counts, "3 rows: 1 regressed, 0 invalid, 0 with more failed "
			  "allocations, 0 worse within the threshold, 0 better, 0 "
			  "fixed, 1 unchanged, 0 only in base, 1 only in new");
	/* Cut to fit, as snprintf cuts. */
	CHECK_STR(as_comparison_counts(c, tiny, sizeof(tiny)), "3 rows: 1 r");
	char *md = markdown(c, false);
	char line[700];
	snprintf(line, sizeof(line), "\n\n%s.\n\n", counts);
	CHECK(strstr(md, line) != NULL);
	/* Its table's head, as every Markdown table's: names, then alignment. */
	CHECK(strstr(md, "| status | trace | strategy | base | new | change | "
			 "change % | notes |\n"
			 "|---|---|---|---:|---:|---:|---:|---|\n") != NULL);
	free(md);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

static void markdown_escapes_names_from_result_files(void)
{
	struct as_results *a = set(), *b = set();
	const char *evil = "s\x1b[2J<script>alert(1)</script>|*x*_[l](u)";
	row(a, "t\x1b]0;pwn\x07.ops", evil, 100, 100, true, 0, 1);
	row(b, "t\x1b]0;pwn\x07.ops", evil, 150, 100, true, 0, 1);
	row(a, "tick`tock.ops", "s", 100, 100, true, 0, 1);
	row(b, "tick`tock.ops", "s", 150, 100, true, 0, 1);
	struct as_comparison *c = cmp(a, b, NULL);
	char *md = markdown(c, false);
	CHECK(strchr(md, '\x1b') == NULL && strchr(md, '\x07') == NULL);
	CHECK(strstr(md, "<script>") == NULL);
	CHECK(strstr(md, "| `t\\x1b]0;pwn\\x07.ops` | s\\x1b\\[2J&lt;script&gt;"
			 "alert(1)&lt;/script&gt;\\|\\*x\\*\\_\\[l\\](u) |") !=
	      NULL);
	/* A backtick cannot be in a code span: the name is text. */
	CHECK(strstr(md, "| tick\\`tock.ops | s |") != NULL);
	free(md);
	as_comparison_destroy(c);
	as_results_destroy(a);
	as_results_destroy(b);
}

/* as_escape(s, how) as a string (static: one at a time). */
static const char *esc(const char *s, enum as_escape_how how)
{
	static char buf[256];
	size_t n = as_escape(buf, sizeof(buf), s, how);
	CHECK_EQ_U64(n, strlen(buf));
	return buf;
}

static void escaping_keeps_utf8_and_shows_control_bytes(void)
{
	CHECK_STR(esc("plain/name_1.ops", AS_ESCAPE_TEXT), "plain/name_1.ops");
	CHECK_STR(esc("a\x1b[31mb\nc\x7f", AS_ESCAPE_TEXT),
		  "a\\x1b[31mb\\x0ac\\x7f");
	/* UTF-8 stays; C1 controls, bidi overrides and stray bytes go. */
	CHECK_STR(esc("caf\xc3\xa9 \xe2\x86\x92", AS_ESCAPE_TEXT),
		  "caf\xc3\xa9 \xe2\x86\x92");
	CHECK_STR(esc("x\xc2\x9b" "2Jy", AS_ESCAPE_TEXT), "x\\xc2\\x9b2Jy");
	CHECK_STR(esc("\xe2\x80\xae" "evil", AS_ESCAPE_TEXT),
		  "\\xe2\\x80\\xaeevil");
	CHECK_STR(esc("\xff\xc3(\xe2\x82", AS_ESCAPE_TEXT),
		  "\\xff\\xc3(\\xe2\\x82");
	CHECK_STR(esc("\xc0\xaf\xed\xa0\x80", AS_ESCAPE_TEXT),
		  "\\xc0\\xaf\\xed\\xa0\\x80");
	CHECK_STR(esc("a<b>&c|`*_[]~\\", AS_ESCAPE_MARKDOWN),
		  "a&lt;b&gt;&amp;c\\|\\`\\*\\_\\[\\]\\~\\\\");
	CHECK_STR(esc("a<b>|_\t", AS_ESCAPE_MARKDOWN_CODE), "a<b>\\|_\\x09");
}

static void escaping_cuts_between_whole_escapes(void)
{
	char buf[8];
	/* "ab\x1b" escaped is "ab\\x1b" (6): 5 bytes of room hold "ab". */
	CHECK_EQ_U64(as_escape(buf, 6, "ab\x1b", AS_ESCAPE_TEXT), 6);
	CHECK_STR(buf, "ab");
	CHECK_EQ_U64(as_escape(buf, 7, "ab\x1b", AS_ESCAPE_TEXT), 6);
	CHECK_STR(buf, "ab\\x1b");
	CHECK_EQ_U64(as_escape(buf, 4, "a\xc3\xa9z", AS_ESCAPE_TEXT), 4);
	CHECK_STR(buf, "a\xc3\xa9");
	CHECK_EQ_U64(as_escape(buf, 3, "a\xc3\xa9z", AS_ESCAPE_TEXT), 4);
	CHECK_STR(buf, "a");
	CHECK_EQ_U64(as_escape(NULL, 0, "<", AS_ESCAPE_MARKDOWN), 4);
}

static void a_diagnostic_is_escaped_and_never_empty(void)
{
	char buf[256];
	struct as_diag d = {.file = "dir/x\x1b[2J.ops", .line = 3};
	snprintf(d.msg, sizeof(d.msg), "bad \x07name");
	CHECK_STR(as_diag_text(&d, buf, sizeof(buf)),
		  "dir/x\\x1b[2J.ops:3: bad \\x07name");
	struct as_diag e = {.file = "t.ops", .err = AS_EINVAL};
	CHECK_STR(as_diag_text(&e, buf, sizeof(buf)),
		  "t.ops: invalid argument (no more is known)");
	struct as_diag z = {.file = "t.ops"};
	CHECK(strlen(as_diag_text(&z, buf, sizeof(buf))) > strlen("t.ops: "));
}

/* ---- Running strategies into rows ---- */

static void running_a_strategy_appends_a_validated_row(void)
{
	static const char ops[] = "alloc a 100\nalloc b 50\nfree a\n"
				  "alloc c 100\nfree b\nfree c\n";
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("mem.ops", ops, strlen(ops), "ops", &t,
			     &d) == AS_OK);
	if (!t)
		return;
	struct as_results *r = set();
	CHECK(as_results_run(r, t, "greedy-size", NULL, &d) == AS_OK);
	CHECK(as_results_run(r, t, "no-such-strategy", NULL, &d) == AS_ENOTFOUND);
	CHECK(as_results_run(r, t, "recorded", NULL, &d) == AS_EUNSUPPORTED);
	CHECK_EQ_U64(r->nrows, 1);
	if (r->nrows == 1) {
		CHECK_STR(r->rows[0].trace, "mem.ops");
		CHECK_STR(r->rows[0].strategy, "greedy-size");
		CHECK(r->rows[0].valid);
		CHECK_EQ_U64(r->rows[0].lower_bound, 150);
		CHECK_EQ_U64(r->rows[0].events, 6);
		CHECK_EQ_U64(r->rows[0].buffers, 3);
		CHECK(r->rows[0].peak >= 150);
	}
	as_results_destroy(r);
	as_trace_destroy(t);
}

static void the_replay_json_writer_reads_back_as_its_rows(void)
{
	static const char ops[] = "alloc a 100\nalloc b 50\nfree a\n"
				  "alloc c 100\nfree b\nfree c\n";
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d;
	struct as_report rep;
	CHECK(as_trace_parse("mem.ops", ops, strlen(ops), "ops", &t,
			     &d) == AS_OK);
	if (!t || as_strategy_run("greedy-size", t, NULL, &p, &d) != AS_OK ||
	    as_validate(t, p, &rep) != AS_OK) {
		CHECK(!"greedy-size plans and validates");
		as_plan_destroy(p);
		as_trace_destroy(t);
		return;
	}
	uint64_t peak_time = 2;
	const char *left[] = {"strip"};
	struct as_replay_result x = {"greedy-size", p, &rep,
				     as_plan_peak(p, t, -1),
				     as_plan_failed(p, t), &peak_time, NULL};
	struct as_replay_run run = {t, as_trace_lower_bound(t), NULL, &x, 1,
				    left, 1, 50};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f && as_replay_write_json(&run, f) == AS_OK);
	if (f)
		fclose(f);
	CHECK(text && strstr(text, "\"peak_time\": 2,"));
	CHECK(text && strstr(text, "\"lower_bound_time\": null}"));
	struct as_results *r = set();
	if (text && reads(r, "mem.json", text, 2)) {
		CHECK_STR(r->rows[0].strategy, "greedy-size");
		CHECK_EQ_U64(r->rows[0].peak, x.peak);
		CHECK_EQ_U64(r->rows[0].events, 6);
		CHECK(r->rows[0].valid && !r->rows[0].left_out);
		CHECK_STR(r->rows[1].strategy, "strip");
		CHECK(r->rows[1].left_out);
	}
	as_results_destroy(r);
	free(text);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void plan_delta_marks_moved_buffers_and_the_peak_cross_section(void)
{
	/* a [0,2) 100, b [1,3) 50, c [2,4) 100, d [3,4) 10 */
	static const char ops[] = "alloc a 100\nalloc b 50\nfree a\n"
				  "alloc c 100\nfree b\nalloc d 10\n"
				  "free c\nfree d\n";
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("m.ops", ops, strlen(ops), "ops", &t, &d) ==
	      AS_OK);
	if (!t)
		return;
	struct as_plan *pa = as_plan_create(t), *pb = as_plan_create(t);
	CHECK(pa && pb);
	if (!pa || !pb)
		return;
	uint64_t oa[] = {0, 100, 0, 100};   /* peak 150 (b, then c + d) */
	uint64_t ob[] = {0, 100, 150, 0};   /* c moved up: peak 250 */
	for (int i = 0; i < 4; i++) {
		pa->offset[i] = oa[i];
		pb->offset[i] = ob[i];
	}
	uint8_t marks[4];
	struct as_plan_delta pd;
	CHECK(as_plan_delta(t, pa, pb, marks, &pd) == AS_OK);
	CHECK_EQ_U64(pd.peak_a, 150);
	CHECK_EQ_U64(pd.peak_b, 250);
	CHECK_EQ_U64(pd.moved, 2);          /* c and d */
	CHECK_EQ_U64(pd.peak_buffer, 2);    /* c reaches 250 */
	CHECK_EQ_U64(pd.at_peak, 2);        /* b and c live at c's start */
	CHECK_EQ_U64(marks[0], 0);
	CHECK_EQ_U64(marks[1], AS_MARK_AT_PEAK);
	CHECK_EQ_U64(marks[2], AS_MARK_MOVED | AS_MARK_AT_PEAK);
	CHECK_EQ_U64(marks[3], AS_MARK_MOVED);
	/* identical plans: nothing moved */
	CHECK(as_plan_delta(t, pa, pa, NULL, &pd) == AS_OK);
	CHECK_EQ_U64(pd.moved, 0);
	as_plan_destroy(pa);
	as_plan_destroy(pb);
	as_trace_destroy(t);
}

static void destroy_functions_accept_null(void)
{
	as_results_destroy(NULL);
	as_comparison_destroy(NULL);
}

int main(void)
{
	TEST_RUN(rows_match_by_trace_and_strategy);
	TEST_RUN(rows_match_by_file_name_when_directories_differ);
	TEST_RUN(ambiguous_file_names_are_not_matched);
	TEST_RUN(repeated_keys_match_in_order);
	TEST_RUN(any_growth_regresses_with_the_default_threshold);
	TEST_RUN(one_byte_more_on_a_huge_peak_still_regresses);
	TEST_RUN(growth_within_max_regress_is_worse_but_passes);
	TEST_RUN(missing_rows_are_reported_on_both_sides_without_failing);
	TEST_RUN(missing_fails_makes_rows_missing_from_new_fail);
	TEST_RUN(a_strategy_left_out_at_the_step_limit_is_named_not_compared);
	TEST_RUN(a_plan_that_became_invalid_fails_even_when_smaller);
	TEST_RUN(an_invalid_base_plan_made_valid_is_fixed);
	TEST_RUN(a_smaller_peak_with_more_failed_allocations_fails);
	TEST_RUN(failed_metric_growing_from_zero_is_an_infinite_change);
	TEST_RUN(timing_changes_within_the_noise_allowance_are_the_same);
	TEST_RUN(peak_vs_lb_is_computed_from_the_integers);
	TEST_RUN(an_edited_trace_is_reported_not_compared);
	TEST_RUN(two_strategies_on_the_same_traces_match_by_trace);
	TEST_RUN(metric_names_round_trip_and_unknown_ones_fail);
	TEST_RUN(the_single_trace_shape_reads);
	TEST_RUN(the_runs_shape_reads);
	TEST_RUN(a_runs_left_out_member_reads_as_rows_without_plans);
	TEST_RUN(peaks_above_2_to_the_53_read_exactly);
	TEST_RUN(bad_result_files_name_the_problem_and_line);
	TEST_RUN(truncated_and_corrupted_files_fail_cleanly);
	TEST_RUN(a_missing_file_is_an_io_error);
	TEST_RUN(a_fifo_is_read_as_a_stream_and_a_directory_refused);
	TEST_RUN(markdown_lists_regressions_first_and_counts_unchanged);
	TEST_RUN(markdown_of_a_clean_comparison_says_so);
	TEST_RUN(markdown_notes_invalid_plans_and_failed_allocations);
	TEST_RUN(the_text_and_markdown_reports_count_in_the_same_words);
	TEST_RUN(markdown_escapes_names_from_result_files);
	TEST_RUN(escaping_keeps_utf8_and_shows_control_bytes);
	TEST_RUN(escaping_cuts_between_whole_escapes);
	TEST_RUN(a_diagnostic_is_escaped_and_never_empty);
	TEST_RUN(running_a_strategy_appends_a_validated_row);
	TEST_RUN(the_replay_json_writer_reads_back_as_its_rows);
	TEST_RUN(plan_delta_marks_moved_buffers_and_the_peak_cross_section);
	TEST_RUN(destroy_functions_accept_null);
	return tap_done();
}
