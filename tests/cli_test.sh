#!/usr/bin/env bash
# End-to-end tests of the command-line contract (TAP). Needs AS_EXE and
# AS_SOURCE_DIR (set by meson).
set -u
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"

# Bad inputs (tests/bad/): tests/bad_input_test.sh.
cd "$src"

"$exe" replay traces/small-cnn.json >"$tmp/table" 2>&1
rc=$?
grep -q "greedy-size" "$tmp/table" && grep -q "lower bound 2531328" "$tmp/table"
ok "replay prints a table of every applicable strategy" $((rc + $?))

"$exe" replay traces/small-cnn.json -s greedy-size --json - >"$tmp/j" 2>&1
rc=$?
grep -q '"trace": {"name": "traces/small-cnn.json", "format": "json", "events": 59, "buffers": 30, "lower_bound": 2531328, "lower_bound_time": 19}' "$tmp/j" &&
	grep -q '"strategy": "greedy-size", "peak": 2531328, "peak_time": 19, "lower_bound": 2531328' "$tmp/j" &&
	grep -q '"valid": true, "overlaps": 0' "$tmp/j" && grep -q '"plan_ms": ' "$tmp/j"
ok "replay --json - writes the documented object" $((rc + $?))

# The table alone lets each valid plan's offsets go once it is checked; its
# figures are the JSON's, which keeps them.
"$exe" replay traces/server-churn.ops -j 1 >"$tmp/churn.table" 2>&1 &&
	"$exe" replay traces/server-churn.ops -j 1 --json "$tmp/churn.json" \
		>/dev/null 2>&1
rc=$?
rows=$(awk '/^strategy/ { n++; next } n == 1 && NF >= 8 { print $1, $2, $(NF - 2), $(NF - 1) }' "$tmp/churn.table")
bad=0
[ -n "$rows" ] || bad=1
while read -r name peak valid nfailed; do
	[ "$valid" = yes ] && valid=true
	grep -q "\"strategy\": \"$name\", \"peak\": $peak,.*\"valid\": $valid,.*\"failed\": $nfailed," \
		"$tmp/churn.json" || bad=1
done <<<"$rows"
ok "replay's table gives each strategy the peak, validity and failures of its JSON" $((rc + bad))

# Without an image the plans' offsets go once checked; with one they stay.
# The JSON (peak moments, per-space peaks of numa's cores) is the same.
bad=0
for tr in traces/numa-small.json traces/server-churn.ops; do
	"$exe" replay "$tr" -j 1 --json "$tmp/lean.json" >/dev/null 2>&1 &&
		"$exe" replay "$tr" -j 1 --json "$tmp/kept.json" \
			--svg "$tmp/kept.svg" >/dev/null 2>&1 || bad=1
	sed 's/"\(plan_\)\{0,1\}ms": [0-9.]*//g' "$tmp/lean.json" >"$tmp/lean"
	sed 's/"\(plan_\)\{0,1\}ms": [0-9.]*//g' "$tmp/kept.json" >"$tmp/kept"
	cmp -s "$tmp/lean" "$tmp/kept" || bad=1
	case $tr in
	*numa*) grep -q '"spaces": \[' "$tmp/lean.json" || bad=1 ;;
	esac
done
ok "replay --json writes the same results whether or not an image keeps the plans" $bad

"$exe" replay traces/small-cnn.json --step-limit 50 --json "$tmp/lo.json" \
	>/dev/null 2>"$tmp/lo.err"
rc=$?
grep -q 'left out at the step limit of 50 steps: greedy-size, greedy-breadth, bestfit' "$tmp/lo.err" &&
	grep -q '"left_out": {"step_limit": 50, "strategies": \["greedy-size", "greedy-breadth", "bestfit"\]}' "$tmp/lo.json" &&
	! grep -q '"strategy": "bestfit"' "$tmp/lo.json" &&
	grep -q '"strategy": "strip", "peak": 2531328' "$tmp/lo.json"
ok "replay leaves out the baselines past --step-limit, says so and lists them in the JSON; strip goes on" $((rc + $?))

"$exe" replay traces/small-cnn.json --step-limit 0 --json "$tmp/all.json" \
	>/dev/null 2>"$tmp/all.err"
rc=$?
grep -q '"strategy": "bestfit"' "$tmp/all.json" && ! grep -q 'left_out' "$tmp/all.json" &&
	! grep -q 'left out' "$tmp/all.err"
ok "replay --step-limit 0 runs every baseline of the default set to the end" $((rc + $?))

printf 'id,lower,upper,size\nx,0,4,8\ny,2,6,8\nx,5,9,8\n' >"$tmp/t.csv"
"$exe" replay "$tmp/t.csv" -s greedy-size --plan-out "$tmp/plan.csv" >/dev/null
rc=$?
printf 'id,lower,upper,size,offset\nx,0,4,8,0\ny,2,6,8,8\nx,5,9,8,0\n' >"$tmp/want.csv"
cmp -s "$tmp/plan.csv" "$tmp/want.csv"
ok "replay --plan-out writes one CSV row per allocation in trace order" $((rc + $?))

"$exe" check "$tmp/t.csv" --plan "$tmp/plan.csv" >/dev/null
ok "check accepts a valid plan with repeated ids matched by order" $?

printf 'id,lower,upper,size,offset\nx,0,4,8,0\ny,2,6,8,4\nx,5,9,8,0\n' >"$tmp/bad.csv"
out=$("$exe" check "$tmp/t.csv" --plan "$tmp/bad.csv" 2>"$tmp/err")
rc=$?
# Exit 1 is also what a sanitizer gives: its report must not be there.
[ $rc -eq 1 ] && echo "$out" | grep -q "'x' (time \[0, 4), addresses \[0, 8)) overlaps 'y'" &&
	! grep -qE "Sanitizer|runtime error" "$tmp/err"
ok "check exits 1 and names the first overlap" $?

printf 'id,lower,upper,size,offset\n0,0,4,8,0\n1,2,6,8,4\n' >"$tmp/rec.csv"
"$exe" check "$tmp/rec.csv" >/dev/null 2>"$tmp/err"
rc=$?
"$exe" replay "$tmp/rec.csv" -s recorded -s greedy-size -j 2 >"$tmp/out" 2>>"$tmp/err"
rc2=$?
grep -q "recorded: invalid plan: '0' (time \[0, 4), addresses \[0, 8)) overlaps '1'" "$tmp/err" &&
	grep -qE '^recorded +12 .* NO ' "$tmp/out" &&
	grep -qE '^greedy-size +16 .* yes ' "$tmp/out" &&
	! grep -qE "Sanitizer|runtime error" "$tmp/err"
ok "check and replay of the trace's own overlapping offsets exit 1, the rows after the invalid one shown" $(( (rc == 1 && rc2 == 1 && $? == 0) ? 0 : 1 ))

"$exe" check traces/small-cnn.json >/dev/null 2>&1
ok "check without offsets or a plan is a usage error" $(( $? == 2 ? 0 : 1 ))

"$exe" replay traces/small-cnn.json --plan-out "$tmp/p.csv" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/p.csv" ]
ok "--plan-out without exactly one -s is a usage error" $?

out=$("$exe" replay traces/small-cnn.json -s nope 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "unknown strategy 'nope'"
ok "an unknown strategy is refused by name" $?

out=$("$exe" replay traces/small-cnn.json -s greedy-size:speed=9 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "unknown option 'speed'"
ok "an unknown option is refused by name" $?

"$exe" replay traces/small-cnn.json --frobnicate >/dev/null 2>&1
ok "an unknown flag is a usage error" $(( $? == 2 ? 0 : 1 ))

"$exe" replay /nonexistent.ops >/dev/null 2>&1
ok "a missing file is an input error" $(( $? == 2 ? 0 : 1 ))

# plan_ms differs run to run; everything else is the plans'.
"$exe" replay traces -j 1 --no-progress --json "$tmp/j1.json" >/dev/null 2>&1
rc=$?
"$exe" replay traces -j 4 --no-progress --json "$tmp/j4.json" >/dev/null 2>&1
rc=$((rc + $?))
sed 's/"\(plan_\)\{0,1\}ms": [0-9.e+-]*//g' "$tmp/j1.json" >"$tmp/j1"
sed 's/"\(plan_\)\{0,1\}ms": [0-9.e+-]*//g' "$tmp/j4.json" >"$tmp/j4"
[ $rc -eq 0 ] && grep -q '"strategy": "strip"' "$tmp/j1" && cmp -s "$tmp/j1" "$tmp/j4"
ok "replay -j 4 runs strategies side by side and reports what -j 1 does" $?

out=$("$exe" replay traces/small-cnn.json -j 2 -s greedy-size -s nope 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "unknown strategy 'nope'" &&
	! echo "$out" | grep -q "^strategy"
ok "a strategy failing beside others is refused by name, with no table" $?

"$exe" replay traces/small-cnn.json -j 0 >/dev/null 2>&1
ok "-j wants at least one strategy at a time" $(( $? == 2 ? 0 : 1 ))

"$exe" strategies | grep -q "^greedy-size"
ok "strategies lists the registry" $?

# --rule names a category of the bands, as explain --by category does.
h=tests/inputs/heaptrack.python3-multiline.zst
"$exe" replay "$h" -s greedy-size --svg "$tmp/bands.svg" --bands category \
	--rule 'dicts=PyDict' >/dev/null 2>&1 &&
	grep -q '>dicts<' "$tmp/bands.svg" &&
	"$exe" replay "$h" -s greedy-size --svg "$tmp/plain.svg" \
		--bands category >/dev/null 2>&1 &&
	! grep -q '>dicts<' "$tmp/plain.svg"
ok "replay --bands category draws the user's --rule categories" $?
"$exe" replay "$h" -s greedy-size --svg "$tmp/no.svg" --rule 'd=PyDict' \
	>/dev/null 2>&1
[ $? -eq 2 ] && [ ! -e "$tmp/no.svg" ]
ok "--rule without --bands category is a usage error, with no picture" $?

echo "1..$n"
[ $failed -eq 0 ]
