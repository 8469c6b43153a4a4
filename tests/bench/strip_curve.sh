#!/bin/sh
# strip's quality vs budget (issue 39): strip at budgets 1, 3, 10 and 30 s,
# then the randomized-restart reference (strip_rr) at 80 s, on compiler-like
# traces and idealloc's G_1 and resnet50. Run from the repository after
# `ninja -C build-rel` (a release build: meson setup build-rel
# --buildtype=release); needs ../shared and python3.
#
#   tests/bench/strip_curve.sh [BUILD_DIR] [BUDGETS_S] [RR_S]
#
# Prints one line per run: trace, budget, strip's height over the lower
# bound, the same without the order search (the best round before it), the
# order search's trials and lowerings, plan ms; then strip_rr's height.
set -e
B=${1:-build-rel}
BUDGETS=${2:-"1 3 10 30"}
RR=${3:-80}
T=${TMPDIR:-/tmp}/strip_curve
mkdir -p "$T"
I=../shared/benchmarks/idealloc
python3 tests/bench/place_gen.py compiler-vary 28000 $I/resnet50.csv 2 \
	> "$T/v-r50-28k.csv"
python3 tests/bench/strip_gen.py tile 30000 ../shared/benchmarks/minimalloc/G.1048576.csv \
	> "$T/tile-G-30k.csv"
for f in "$T/v-r50-28k.csv" "$T/tile-G-30k.csv" $I/G_1.csv $I/resnet50.csv; do
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
pre = min(r["peak"] for r in s["rounds"] if r["label"] != "order search")
st = s.get("stats", {})
print("%-16s %3s s  %+.4f%%  without order search %+.4f%%  trials %s, lowered %s  %.0f ms" % (
    sys.argv[1].split("/")[-1], sys.argv[2], 100 * (s["peak"] / lb - 1),
    100 * (pre / lb - 1), st.get("order_moves", "-"), st.get("order_wins", "-"),
    s.get("plan_ms", 0)))' "$f" "$b"
	done
	"$B/tests/strip_rr" "$f" "$RR" | awk -v f="$(basename "$f")" -v s="$RR" \
		'{printf "%-16s strip_rr %s s  %+.4f%%  (%s restarts)\n", f, s, 100 * ($1 / $2 - 1), $3}'
done
