#!/bin/sh
# End-to-end tests of `allocscope diff` and multi-trace `replay`, driving the
# built binary ($AS_EXE) from the source root ($AS_SOURCE_DIR). TAP output.
set -u
exe=${AS_EXE:?AS_EXE is not set}
src=${AS_SOURCE_DIR:?AS_SOURCE_DIR is not set}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1
fx=tests/diff

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
	sed 's/^/#   /' "$tmp/out" "$tmp/err" 2>/dev/null | head -40
}
# expect STATUS NAME CMD...: run CMD, check its exit status.
expect() {
	want=$1 name=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	# A sanitizer report would hide behind an expected exit status 1.
	if grep -qE "Sanitizer|runtime error" "$tmp/err"; then
		not_ok "$name (sanitizer report)"
	elif [ "$got" -eq "$want" ]; then ok "$name"; else
		echo "# exit status $got, expected $want" >>"$tmp/err"
		not_ok "$name"
	fi
}
# grep_out NAME PATTERN [FILE]: the last output (or FILE) contains PATTERN.
grep_out() {
	if grep -q -- "$2" "${3:-$tmp/out}"; then ok "$1"; else
		echo "# no '$2' in ${3:-output}" >>"$tmp/err"
		not_ok "$1"
	fi
}

# A deliberately worse strategy: the recorded offsets of this trace never
# reuse memory, so "recorded" against "greedy-size" must fail the gate.
expect 1 "a_worse_strategy_fails_the_gate" \
	"$exe" diff -s greedy-size -s recorded $fx/recorded-worse.csv
grep_out "the_regressed_row_is_named" \
	"^REGRESSED .*recorded-worse.csv .*greedy-size -> recorded .*16384 .*36864 .*+20480 .*+125.00%"
expect 0 "a_better_strategy_passes_the_gate" \
	"$exe" diff -s recorded -s greedy-size $fx/recorded-worse.csv
grep_out "the_better_row_is_named" "^better "
expect 0 "a_large_enough_threshold_lets_the_worse_strategy_pass" \
	"$exe" diff -s greedy-size -s recorded --max-regress 125 \
	$fx/recorded-worse.csv
expect 1 "an_invalid_plan_fails_the_gate" \
	"$exe" diff -s greedy-size -s recorded $fx/recorded-overlap.csv
grep_out "the_invalid_row_is_named" "^INVALID .*invalid plan"

# Result files: base and new from replay --json.
"$exe" replay $fx/recorded-worse.csv --json "$tmp/base.json" >/dev/null
expect 0 "a_result_file_compared_with_itself_passes" \
	"$exe" diff "$tmp/base.json" "$tmp/base.json"
grep_out "the_verdict_line_says_ok" "^OK: no regression"
# Simulate a baseline from before a regression: greedy-size was smaller.
sed 's/"strategy": "greedy-size", "peak": 16384/"strategy": "greedy-size", "peak": 16000/' \
	"$tmp/base.json" >"$tmp/old.json"
expect 1 "a_row_worse_than_the_baseline_fails" \
	"$exe" diff "$tmp/old.json" "$tmp/base.json" --markdown "$tmp/report.md"
grep_out "the_markdown_report_is_written" \
	"| \*\*regressed\*\* | \`tests/diff/recorded-worse.csv\` | greedy-size | 16000 | 16384 | +384 | +2.40% |" \
	"$tmp/report.md"
expect 0 "the_threshold_is_a_percentage" \
	"$exe" diff "$tmp/old.json" "$tmp/base.json" --max-regress 2.5

# An edited trace (here: one buffer more in the base's description of it)
# is reported and not compared, even when its peak looks worse.
sed 's/"buffers": 7, "lower_bound": 16384/"buffers": 8, "lower_bound": 16384/' \
	"$tmp/old.json" >"$tmp/edited.json"
expect 0 "an_edited_trace_is_not_a_regression" \
	"$exe" diff "$tmp/edited.json" "$tmp/base.json"
grep_out "the_edited_trace_is_reported" "^trace changed .*recorded-worse.csv"
grep_out "regenerating_is_suggested" "regenerate the base"

# Rows on one side only.
"$exe" replay -s greedy-size $fx/recorded-worse.csv --json "$tmp/one.json" \
	>/dev/null
expect 0 "rows_only_in_new_are_reported_without_failing" \
	"$exe" diff "$tmp/one.json" "$tmp/base.json"
grep_out "the_new_row_is_listed" "^only in new .*recorded"
expect 0 "rows_only_in_base_are_reported" \
	"$exe" diff "$tmp/base.json" "$tmp/one.json"
grep_out "the_missing_row_is_listed" "^only in base .*recorded"
expect 1 "fail_missing_fails_rows_missing_from_new" \
	"$exe" diff "$tmp/base.json" "$tmp/one.json" --fail-missing

# Baselines left out at the default set's step limit are named, not compared;
# only --fail-missing fails a plan the base had and the new run lacks.
"$exe" replay $fx/recorded-worse.csv --step-limit 1 --json "$tmp/lo.json" \
	>/dev/null 2>&1
expect 0 "baselines_left_out_at_the_step_limit_do_not_fail" \
	"$exe" diff "$tmp/base.json" "$tmp/lo.json"
grep_out "a_left_out_baseline_is_named" \
	"^left out in new .*recorded-worse.csv .*bestfit .*left out"
grep_out "the_counts_name_the_left_out_rows" "3 left out at the default set's step limit (not compared)$"
expect 1 "fail_missing_fails_a_plan_left_out_in_new" \
	"$exe" diff "$tmp/base.json" "$tmp/lo.json" --fail-missing
grep_out "the_verdict_counts_them_missing" "3 missing from NEW"

# Traces replayed from another directory still match by file name.
(cd tests && "$exe" replay diff/recorded-worse.csv --json "$tmp/elsewhere.json" \
	>/dev/null)
expect 0 "rows_match_across_directories" \
	"$exe" diff "$tmp/base.json" "$tmp/elsewhere.json" --all
grep_out "matched_rows_are_the_same" "^same .*greedy-size"

expect 0 "timing_compared_with_itself_passes" \
	"$exe" diff "$tmp/base.json" "$tmp/base.json" --metric plan_ms
grep_out "the_noise_allowance_is_stated" "noise allowance"

# Bad input: exit status 2 and a message.
expect 2 "a_missing_result_file_is_bad_input" \
	"$exe" diff "$tmp/base.json" "$tmp/nonexistent.json"
grep_out "the_missing_file_is_named" "nonexistent.json: cannot open" "$tmp/err"
printf '{"trace": {"name": "x"}, "results": [\n{"peak": 1}]}\n' >"$tmp/bad.json"
expect 2 "a_malformed_result_file_is_bad_input" \
	"$exe" diff "$tmp/bad.json" "$tmp/base.json"
grep_out "the_bad_field_is_named" \
	"bad.json:2: results\[0\]: missing field 'strategy'" "$tmp/err"
expect 2 "a_trace_is_not_a_result_file" \
	"$exe" diff $fx/recorded-worse.csv "$tmp/base.json"
expect 2 "an_unknown_metric_is_bad_input" \
	"$exe" diff "$tmp/base.json" "$tmp/base.json" --metric speed
grep_out "the_unknown_metric_is_named" "unknown metric 'speed'" "$tmp/err"
expect 2 "a_negative_threshold_is_bad_input" \
	"$exe" diff "$tmp/base.json" "$tmp/base.json" --max-regress -1
expect 2 "one_spec_is_bad_input" \
	"$exe" diff -s greedy-size $fx/recorded-worse.csv
expect 2 "an_unknown_strategy_is_bad_input" \
	"$exe" diff -s greedy-size -s no-such $fx/recorded-worse.csv
grep_out "the_unknown_strategy_is_named" "unknown strategy 'no-such'" "$tmp/err"
expect 2 "a_strategy_that_cannot_plan_a_trace_is_bad_input" \
	"$exe" diff -s greedy-size -s recorded traces/transformer-step.ops
expect 2 "one_result_file_is_bad_input" "$exe" diff "$tmp/base.json"
expect 2 "svg_needs_two_specs" \
	"$exe" diff "$tmp/base.json" "$tmp/base.json" --svg "$tmp/svg"
grep_out "svg_says_it_needs_plans" "needs -s A -s B" "$tmp/err"
expect 1 "svg_draws_the_traces_whose_peak_changed" \
	"$exe" diff -s greedy-size -s recorded $fx/recorded-worse.csv --svg "$tmp/svg"
grep_out "the_visual_diff_is_an_svg" "<svg" \
	"$tmp/svg/tests_diff_recorded-worse.csv.svg"
grep_out "the_new_plan_names_what_moved" \
	"5 buffers moved, peak reached by g" \
	"$tmp/svg/tests_diff_recorded-worse.csv.svg"
expect 0 "svg_of_unchanged_peaks_passes" \
	"$exe" diff -s greedy-size -s greedy-size traces/transformer-step.ops \
	--svg "$tmp/svg2"
[ -z "$(ls "$tmp/svg2" 2>/dev/null)" ] &&
	ok "traces_whose_peak_did_not_change_get_no_picture" ||
	not_ok "traces_whose_peak_did_not_change_get_no_picture"

"$exe" diff -s bestfit -s strip traces --all --no-progress -j 1 \
	>"$tmp/j1" 2>&1
"$exe" diff -s bestfit -s strip traces --all --no-progress -j 2 \
	>"$tmp/j2" 2>&1
if grep -q "bestfit -> strip" "$tmp/j1" && cmp -s "$tmp/j1" "$tmp/j2"; then
	ok "two_specs_side_by_side_report_what_one_at_a_time_does"
else
	not_ok "two_specs_side_by_side_report_what_one_at_a_time_does"
fi
expect 2 "j_wants_a_count" \
	"$exe" diff -s greedy-size -s bfc traces -j none

# Multi-trace replay.
expect 0 "replay_takes_a_directory" \
	"$exe" replay $fx -s greedy-size --no-progress --json "$tmp/runs.json"
grep_out "a_directory_writes_the_runs_shape" \
	'^{"format": "allocscope-results", "version": 1, "runs": \[' "$tmp/runs.json"
expect 0 "replay_takes_several_traces" \
	"$exe" replay $fx/recorded-worse.csv traces/server-churn.ops -s greedy-size
grep_out "each_trace_gets_a_table" "^trace traces/server-churn.ops"
expect 0 "one_trace_keeps_the_single_object_shape" \
	"$exe" replay $fx/recorded-worse.csv --json -
grep_out "the_single_shape_starts_with_trace" '^{"trace": {"name": '
expect 2 "plan_out_needs_one_trace" \
	"$exe" replay $fx/recorded-worse.csv traces/server-churn.ops \
	-s greedy-size --plan-out "$tmp/plan.csv"
expect 2 "a_bad_trace_among_several_is_bad_input" \
	"$exe" replay $fx/recorded-worse.csv "$tmp/bad.json" --json "$tmp/partial.json"
[ ! -e "$tmp/partial.json" ] && ok "no_half_written_json_on_bad_input" || not_ok "no_half_written_json_on_bad_input"
mkdir "$tmp/empty"
expect 2 "a_directory_without_traces_is_bad_input" "$exe" replay "$tmp/empty"
grep_out "the_empty_directory_is_named" "no traces in this directory" "$tmp/err"
expect 1 "an_invalid_plan_among_several_traces_exits_1" \
	"$exe" replay $fx -s recorded --json "$tmp/inv.json"
expect 0 "the_runs_shape_reads_back" "$exe" diff "$tmp/runs.json" "$tmp/runs.json"

echo "1..$n"
[ "$failed" -eq 0 ]
