#!/bin/sh
# strip's quality vs budget: strip at budgets 1, 3, 10 and 30 s,
# then the randomized-restart reference (strip_rr) at 10 s and RR_S, on
# compiler-like traces, tiled real traces and idealloc's G_1 and resnet50. Run from the repository after
# `ninja -C build-rel` (a release build: meson setup build-rel
# --buildtype=release); needs ../shared and python3.
#
#   tests/bench/strip_curve.sh [BUILD_DIR] [BUDGETS_S] [RR_S]
#
# Prints one line per run: trace, budget, strip's height over the lower
# bound, the same without the restarts (the best round before them), the
# restarts and how many went lower, plan ms, and when (s) the plan was
# found; then strip_rr's heights.
set -e
B=${1:-build-rel}
BUDGETS=${2:-"1 3 10 30"}
RR=${3:-80}
T=${TMPDIR:-/tmp}/strip_curve
mkdir -p "$T"
I=../shared/benchmarks/idealloc
python3 tests/bench/place_gen.py compiler-vary 28000 $I/resnet50.csv 2 \
	> "$T/v-r50-28k.csv"
M=../shared/benchmarks/minimalloc
python3 tests/bench/strip_gen.py tile 18000 $I/resnet50.csv > "$T/tile-r50-18k.csv"
python3 tests/bench/strip_gen.py tile 28000 $M/D.1048576.csv > "$T/tile-D-28k.csv"
python3 tests/bench/strip_gen.py tile 30000 $M/G.1048576.csv > "$T/tile-G-30k.csv"
for f in "$T/v-r50-28k.csv" "$T/tile-r50-18k.csv" "$T/tile-D-28k.csv" \
	"$T/tile-G-30k.csv" $I/G_1.csv $I/resnet50.csv; do
	[ -s "$f" ] || continue
	for b in $BUDGETS; do
		"$B/allocscope" replay "$f" -s strip:budget_ms=$((b * 1000)) \
			--json - 2>/dev/null | python3 -c '
import json, sys
t = sys.stdin.read(); d = json.loads(t[t.index("{"):])
def find(o, k):
    if isinstance(o, dict):
        if k in o: return o[k]
        o = list(o.values())
    if isinstance(o, list):
        for v in o:
            r = find(v, k)
            if r is not None: return r
def runs(o):
    if isinstance(o, dict):
        if "rounds" in o and "peak" in o: yield o
        for v in o.values(): yield from runs(v)
    elif isinstance(o, list):
        for v in o: yield from runs(v)
lb = find(d, "lower_bound")
s = next(runs(d))
# (rounds below the bound are plans of the big-first sub-problem)
pre = min(r["peak"] for r in s["rounds"]
          if r["label"] != "skyline restart" and r["peak"] >= lb)
found = min(r["ms"] for r in s["rounds"] if r["peak"] == s["peak"])
st = s.get("stats", {})
print("%-16s %3s s  %+.4f%%  without restarts %+.4f%%  restarts %s, lower %s  %.0f ms, found at %.1f s" % (
    sys.argv[1].split("/")[-1], sys.argv[2], 100 * (s["peak"] / lb - 1),
    100 * (pre / lb - 1), st.get("restarts", "-"), st.get("restart_wins", "-"),
    s.get("plan_ms", 0), found / 1000))' "$f" "$b"
	done
	for s in 10 "$RR"; do
		"$B/tests/strip_rr" "$f" "$s" | awk -v f="$(basename "$f")" -v s="$s" \
			'{printf "%-16s strip_rr %s s  %+.4f%%  (%s restarts)\n", f, s, 100 * ($1 / $2 - 1), $3}'
	done
done
