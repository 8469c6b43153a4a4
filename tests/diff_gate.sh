#!/bin/sh
# The CI gate: replay every trace in traces/ under every strategy that
# applies and compare the peaks with the committed tests/baseline.json.
# Fails when any (trace, strategy) row is worse than the baseline, has an
# invalid plan, fails more allocations, or has disappeared. Rows new since
# the baseline (a strategy or trace added later) are listed, not failed.
#
# When the improvement or the new rows are deliberate, regenerate the
# baseline: tests/update-baseline.sh (or: ninja -C build update-baseline).
# With AS_DIFF_MARKDOWN set, the Markdown report is written there too (CI
# job summaries).
set -u
exe=${AS_EXE:?AS_EXE is not set}
src=${AS_SOURCE_DIR:?AS_SOURCE_DIR is not set}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1

"$exe" replay traces --no-progress --json "$tmp/new.json" >"$tmp/out" 2>&1
st=$?
if [ "$st" -le 1 ]; then
	echo "ok 1 - every_trace_replays"
else
	echo "not ok 1 - every_trace_replays (exit status $st)"
	sed 's/^/#   /' "$tmp/out"
	echo "1..2"
	echo "not ok 2 - no_planner_is_worse_than_the_baseline # replay failed"
	exit 1
fi
set -- diff tests/baseline.json "$tmp/new.json" --metric peak --fail-missing
if [ -n "${AS_DIFF_MARKDOWN:-}" ]; then
	set -- "$@" --markdown "$AS_DIFF_MARKDOWN"
fi
"$exe" "$@" >"$tmp/diff" 2>&1
st=$?
sed 's/^/# /' "$tmp/diff"
if [ "$st" -eq 0 ]; then
	echo "ok 2 - no_planner_is_worse_than_the_baseline"
else
	echo "not ok 2 - no_planner_is_worse_than_the_baseline (exit status $st;" \
		"if the change is deliberate, run tests/update-baseline.sh)"
fi
echo "1..2"
[ "$st" -eq 0 ]
