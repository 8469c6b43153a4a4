#!/bin/sh
# Benchmark of strategy strip (issue 5) against the baselines.
#
#   tests/bench/strip_bench.sh [BUILD_DIR] [SPEC]
#
# BUILD_DIR defaults to build, SPEC to "strip" (default options). Prints two
# markdown tables: the MiniMalloc "challenging" and idealloc instances of
# ../shared/benchmarks (with MiniMalloc's own figures from SOURCE.md), then
# generated large traces (tests/bench/strip_gen.py) of 20k to 1M buffers. Every
# plan is validated by allocscope itself; a row says "INVALID" otherwise.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
spec=${2:-strip}
exe="$here/$build/allocscope"
shared="$here/../shared/benchmarks"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

[ -x "$exe" ] || { echo "no $exe: build first (ninja -C $build)" >&2; exit 2; }

# One row: file, label, extra text (MiniMalloc's figures), baselines to run.
row() {
	file=$1 label=$2 ref=$3 shift_specs=$4
	set -- -s "$spec"
	for b in $shift_specs; do set -- "$@" -s "$b"; done
	"$exe" replay "$file" "$@" --json - > "$tmp/out.json" || true
	python3 - "$tmp/out.json" "$label" "$ref" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
label, ref = sys.argv[2], sys.argv[3]
tr = d["trace"]
lb = tr["lower_bound"]
res = d["results"]
s = res[0]
ok = "" if s["valid"] else " INVALID"
base = [r for r in res[1:] if r["valid"]]
best = min(base, key=lambda r: r["peak"]) if base else None
bs = ("%s %.2f%%" % (best["strategy"], 100.0 * (best["peak"] - lb) / lb)
      if best else "-")
print("| %s | %d | %d | %d%s | %.3f%% | %.2f | %s | %s |" % (
    label, tr["buffers"], lb, s["peak"], ok,
    100.0 * (s["peak"] - lb) / lb, s["plan_ms"] / 1000.0, ref, bs))
EOF
}

echo "## MiniMalloc and idealloc instances ($spec)"
echo
echo "| instance | buffers | lower bound | height | vs bound | s | MiniMalloc height, s | best baseline |"
echo "|---|---|---|---|---|---|---|---|"
start=$(date +%s.%N)
for f in A:1048576:4.50 B:1048576:3.39 C:1047552:0.58 D:1048576:2.33 \
	 E:1048576:3.39 F:1048576:4.55 G:1048576:0.95 H:1048576:1.43 \
	 I:1048576:3.25 J:1048576:0.76 K:1048576:0.51; do
	name=${f%%:*}
	rest=${f#*:}
	row "$shared/minimalloc/$name.1048576.csv" "$name" \
	    "${rest%%:*}, ${rest#*:}" "greedy-size bestfit greedy-breadth"
done
end=$(date +%s.%N)
for f in G_1 resnet50; do
	row "$shared/idealloc/$f.csv" "$f" "-" \
	    "greedy-size bestfit greedy-breadth"
done
echo
python3 -c "import sys; print('MiniMalloc instances, total wall time of the run above: %.1f s (MiniMalloc: 25.6 s)' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$end"
echo

echo "## Generated large traces ($spec)"
echo
echo "| trace | buffers | lower bound | height | vs bound | s | - | best baseline |"
echo "|---|---|---|---|---|---|---|---|"
gen="$here/tests/bench/strip_gen.py"
python3 "$gen" train 60000 > "$tmp/train-60k.csv"
python3 "$gen" malloc 60000 > "$tmp/malloc-60k.csv"
python3 "$gen" tile 20400 "$shared/idealloc/G_1.csv" > "$tmp/g1-tile-20k.csv"
python3 "$gen" tile 52100 "$shared/idealloc/resnet50.csv" \
	> "$tmp/resnet-tile-52k.csv"
python3 "$gen" tile 5210 "$shared/idealloc/resnet50.csv" > "$tmp/rt-5k.csv"
python3 "$gen" tile 10420 "$shared/idealloc/resnet50.csv" > "$tmp/rt-10k.csv"
python3 "$gen" malloc 1000000 > "$tmp/malloc-1m.csv"
row "$tmp/g1-tile-20k.csv" "G_1 x25, overlapping" "-" "greedy-size"
row "$tmp/rt-5k.csv" "resnet50 x5, overlapping" "-" "greedy-size bestfit"
row "$tmp/rt-10k.csv" "resnet50 x10, overlapping" "-" "greedy-size bestfit"
row "$tmp/resnet-tile-52k.csv" "resnet50 x50, overlapping" "-" "greedy-size"
row "$tmp/train-60k.csv" "training step 60k" "-" ""
row "$tmp/malloc-60k.csv" "malloc stream 60k" "-" ""
row "$tmp/malloc-1m.csv" "malloc stream 1M" "-" ""
