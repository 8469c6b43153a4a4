#!/usr/bin/env bash
# strip's certified lower bounds end to end (TAP): replay --json writes a
# certificate per space; tests/cert_check.py, an independent brute-force
# solver, re-solves every sub-problem; allocscope check --certificate
# re-solves them with the exact search and against the trace, and says no
# to a bound raised by hand, to a sub-problem that is no part of the trace
# and to a malformed file; an aligned clique is certified at its padded
# load and checked without a search. Random small traces always; the shared
# benchmarks (MiniMalloc's A-K, idealloc's) when ../shared is present.
# Needs AS_EXE, AS_SOURCE_DIR; reads AS_SHARED_DIR.
set -u
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
shared=${AS_SHARED_DIR:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"

if ! command -v python3 >/dev/null; then
	echo "1..0 # SKIP python3 is not installed"
	exit 0
fi
checker=$src/tests/cert_check.py

# Seven buffers whose optimum (10) is above their load (9).
printf 'id,lower,upper,size\n0,1,2,4\n1,4,6,5\n2,3,5,2\n3,2,5,2\n4,2,4,2\n5,0,3,5\n6,5,7,3\n' \
	>"$tmp/above.csv"
"$exe" replay "$tmp/above.csv" -s strip --json "$tmp/above.json" >/dev/null
ok "replay writes a certificate" $?
python3 "$checker" "$tmp/above.json" >"$tmp/out" 2>&1
s=$?
sed 's/^/#   /' "$tmp/out"
ok "the brute-force checker confirms the bound above the load" $s
grep -q '"certified_bound": 10' "$tmp/above.json"
ok "the bound is the optimum, 10, one above the load" $?
"$exe" replay "$tmp/above.csv" -s strip | grep -q 'certified bound 10: optimal'
ok "the table says the plan is optimal" $?
"$exe" check --certificate "$tmp/above.json" "$tmp/above.csv" >"$tmp/out"
ok "check --certificate re-solves it against the trace" $?
# The picture says it where it shows the lower bound (title and line).
"$exe" replay "$tmp/above.csv" -s strip --svg "$tmp/above.svg" >/dev/null
grep -q 'certified 10 B: optimal' "$tmp/above.svg" &&
	grep -q 'lower bound 9 B .* optimal<' "$tmp/above.svg"
ok "the picture says the bound is certified and the plan optimal" $?
sed 's/"certified_bound": 10/"certified_bound": 11/; s/"height": 10/"height": 11/' \
	"$tmp/above.json" >"$tmp/high.json"
"$exe" check --certificate "$tmp/high.json" >"$tmp/out"
[ $? -eq 1 ] && grep -q 'does NOT hold' "$tmp/out"
ok "a bound raised by hand does not hold (exit 1)" $?
python3 "$checker" "$tmp/high.json" >/dev/null 2>&1
[ $? -eq 1 ]
ok "nor for the brute-force checker" $?
sed '0,/"size": 4,/s//"size": 3,/' "$tmp/above.json" >"$tmp/small.json"
"$exe" check --certificate "$tmp/small.json" "$tmp/above.csv" >"$tmp/out"
[ $? -eq 1 ] && grep -q 'another size' "$tmp/out"
ok "a sub-problem that is no part of the trace is refused (exit 1)" $?
echo '{"results": [{"certificates": [{"space_index": 0}]}]}' >"$tmp/bad.json"
"$exe" check --certificate "$tmp/bad.json" 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "missing field 'lower_bound'" "$tmp/err"
ok "a malformed certificate file is bad input (exit 2)" $?

# Twelve buffers of odd sizes aligned to 16, all live at time 5: their
# padded load (each but the topmost rounded up to 16) is 577, above the
# load (498), and it is the optimum; a clique certificate needs no search.
{
	echo 'id,lower,upper,size,alignment'
	for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
		echo "$i,$((i % 3)),$((6 + i % 4)),$((3 + 7 * i)),16"
	done
} >"$tmp/clique.csv"
"$exe" replay "$tmp/clique.csv" -s strip --json "$tmp/clique.json" >/dev/null &&
	grep -q '"certified_bound": 577' "$tmp/clique.json" &&
	grep -q '"peak": 577' "$tmp/clique.json"
ok "an aligned clique is certified at its padded load, 577, and planned there" $?
"$exe" check --certificate "$tmp/clique.json" "$tmp/clique.csv" >"$tmp/out"
[ $? -eq 0 ] && grep -q '12 buffers: holds (.*; 0 nodes)' "$tmp/out"
ok "check --certificate accepts the clique certificate without a search" $?
python3 "$checker" "$tmp/clique.json" >"$tmp/out" 2>&1
s=$?
sed 's/^/#   /' "$tmp/out"
[ $s -eq 0 ] && grep -q 'at one instant' "$tmp/out"
ok "the brute-force checker confirms the clique by its padded load" $?
sed 's/"certified_bound": 577/"certified_bound": 578/; s/"height": 577/"height": 578/' \
	"$tmp/clique.json" >"$tmp/clique_high.json"
"$exe" check --certificate "$tmp/clique_high.json" "$tmp/clique.csv" >"$tmp/out"
[ $? -eq 1 ] && grep -q 'does NOT hold' "$tmp/out"
ok "a clique certificate one byte above its padded load does not hold (exit 1)" $?
python3 "$checker" "$tmp/clique_high.json" >/dev/null 2>&1
[ $? -eq 1 ]
ok "nor for the independent checker" $?

# Random small traces, neighbours of the one above (two changes each: a
# size, a start or an end moved by one): every certificate re-solves by
# brute force.
python3 - "$tmp" <<'PY'
import random, sys
base = [(1, 2, 4), (4, 6, 5), (3, 5, 2), (2, 5, 2), (2, 4, 2), (0, 3, 5),
        (5, 7, 3)]
rng = random.Random(46)
for k in range(16):
    b = [list(x) for x in base]
    for _ in range(2):
        x = rng.choice(b)
        i = rng.randrange(3)
        x[i] += rng.choice((-1, 1))
        x[2] = max(x[2], 1)
        x[0] = max(x[0], 0)
        if x[1] <= x[0]:
            x[1] = x[0] + 1
    with open(f"{sys.argv[1]}/r{k}.csv", "w") as f:
        f.write("id,lower,upper,size\n")
        for i, (s, e, size) in enumerate(b):
            f.write(f"{i},{s},{e},{size}\n")
PY
all=0
above=0
for f in "$tmp"/r*.csv; do
	"$exe" replay "$f" -s strip --json "$f.json" >/dev/null || all=1
	python3 "$checker" "$f.json" >"$tmp/out" 2>&1 || all=1
	"$exe" check --certificate "$f.json" "$f" >/dev/null || all=1
	grep -q 'no placement below' "$tmp/out" && above=$((above + 1))
done
echo "#   $above of 16 random traces have a bound above the load"
[ "$above" -gt 0 ] || all=1
ok "every random trace's certificate holds for both checkers" $all

if [ -z "$shared" ] || [ ! -d "$shared/benchmarks" ]; then
	skip "the shared benchmarks' certificates hold" "../shared is absent"
else
	all=0
	for f in "$shared"/benchmarks/minimalloc/[A-K].1048576.csv \
		"$shared"/benchmarks/idealloc/*.csv; do
		j=$tmp/$(basename "$f").json
		"$exe" replay "$f" -s strip:budget_ms=300 --json "$j" >/dev/null ||
			all=1
		python3 "$checker" "$j" >"$tmp/out" 2>&1
		s=$?
		[ $s -eq 0 ] || [ $s -eq 3 ] || { all=1; sed "s/^/#   /" "$tmp/out"; }
		"$exe" check --certificate "$j" "$f" >/dev/null || all=1
	done
	ok "the shared benchmarks' certificates hold" $all
fi

echo "1..$n"
[ "$failed" -eq 0 ]
