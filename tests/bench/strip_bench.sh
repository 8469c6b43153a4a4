#!/bin/sh
# Benchmark of strategy strip against the baselines.
#
#   tests/bench/strip_bench.sh [BUILD_DIR] [SPEC]
#
# BUILD_DIR defaults to build, SPEC to "strip" (default options). Prints
# markdown tables: the MiniMalloc "challenging" and idealloc instances of
# ../shared/benchmarks (with MiniMalloc's own figures from SOURCE.md),
# generated large traces (tests/bench/strip_gen.py) of 20k to 1M buffers, and
# compiler-like traces (tests/bench/place_gen.py compiler, 18k-62k tensors
# from the idealloc models; place_gen.py transformer, training steps of
# GPT-2 and a 1B Llama-shaped model). Every plan is validated by allocscope itself; a
# row says "INVALID" otherwise. ONLY=compiler runs only that last table;
# SCALE=1 adds the scale figures: SPEC on a 1.1M-block malloc
# trace, the default replay (every strategy) of it, and SPEC on 10^7 random
# buffers against `sort -n` of the same CSV (wall time ratio, peak RSS per
# buffer). Each table names the load average it started under.
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

load() {
	uptime | sed 's/.*load/load/'
}

compiler() {
	echo "## Compiler-like traces ($spec; $(load))"
	echo
	echo "| trace | buffers | lower bound | height | vs bound | s | - | best baseline |"
	echo "|---|---|---|---|---|---|---|---|"
	pg="$here/tests/bench/place_gen.py"
	for c in 18000:resnet50 62000:resnet50 18000:G_1 62000:G_1; do
		n=${c%%:*} m=${c#*:}
		python3 "$pg" compiler "$n" "$shared/idealloc/$m.csv" \
			> "$tmp/c.csv"
		row "$tmp/c.csv" "compiler $n $m" "-" \
		    "greedy-size bestfit greedy-breadth"
	done
	for c in 18000:gpt2 62000:gpt2-medium 18000:llama-1b 62000:llama-1b; do
		n=${c%%:*} m=${c#*:}
		python3 "$pg" transformer "$n" "$m" > "$tmp/c.csv"
		row "$tmp/c.csv" "transformer $n $m" "-" \
		    "greedy-size bestfit greedy-breadth"
	done
	echo
}

# Wall seconds between two `date +%s.%N` stamps.
secs() {
	python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"
}

scale() {
	echo "## Scale ($spec; $(load))"
	echo
	pg="$here/tests/bench/place_gen.py"
	python3 "$pg" malloc 1100000 4000 > "$tmp/m.csv"
	echo "| trace | buffers | lower bound | height | vs bound | s | - | best baseline |"
	echo "|---|---|---|---|---|---|---|---|"
	row "$tmp/m.csv" "malloc 1100000 4000" "-" ""
	echo
	s0=$(date +%s.%N)
	"$exe" replay "$tmp/m.csv" --no-progress --json "$tmp/all.json" \
		> /dev/null || true
	s1=$(date +%s.%N)
	echo "Default replay (every strategy) of malloc 1100000 4000:" \
	     "$(secs "$s0" "$s1") s wall ($(load)); plan seconds:"
	python3 -c "import json, sys; [print('- %s: %.1f' % (r['strategy'], r['plan_ms'] / 1000)) for r in json.load(open(sys.argv[1]))['results']]" "$tmp/all.json"
	echo
	python3 "$pg" random 10000000 > "$tmp/r.csv"
	s0=$(date +%s.%N)
	sort -n "$tmp/r.csv" > /dev/null
	s1=$(date +%s.%N)
	/usr/bin/time -f '%M' -o "$tmp/rss" "$exe" replay "$tmp/r.csv" \
		-s "$spec" --no-progress > /dev/null || true
	s2=$(date +%s.%N)
	kb=$(tail -1 "$tmp/rss")
	python3 -c "import sys; a, b, c, kb = map(float, sys.argv[1:5]); print('%s on random 10000000: %.1f s wall, sort -n %.1f s wall: %.1fx; peak RSS %.0f MB, %.0f bytes/buffer' % (sys.argv[5], c - b, b - a, (c - b) / (b - a), kb / 1024, kb * 1024 / 1e7))" \
		"$s0" "$s1" "$s2" "$kb" "$spec"
	echo
}

if [ "${ONLY:-}" = compiler ]; then
	compiler
	exit 0
fi

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
echo
compiler
if [ "${SCALE:-}" = 1 ]; then
	scale
fi
