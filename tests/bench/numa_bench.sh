#!/bin/sh
# Benchmark numa-bundle against numa-flat on generated numa traces of about
# 10^5 and 10^6 blocks (docs/numa.md has the figures and how to read them).
#
#   tests/bench/numa_bench.sh [BUILD_DIR] [SEED]
#
# For each instance: the generator's side by side comparison (objects
# analysed, planning time as the best of three runs, validity, largest
# per-core peak, padding, round trips kept on chip, per-core peaks summed),
# then the same three plans through the CLI as a cross-check.
set -eu
build=${1:-build}
seed=${2:-1}
gen=$build/tests/numa_gen
[ -x "$gen" ] || { echo "build first: ninja -C $build" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

for inst in "100000 16" "100000 64" "1000000 8" "1000000 64" \
	    "1000000 256"; do
	set -- $inst
	echo "== $1 blocks, $2 cores, seed $seed"
	"$gen" --cores "$2" --blocks "$1" --seed "$seed" -o "$tmp/t.json"
	"$gen" compare "$tmp/t.json" --quiet
	"$build/allocscope" replay "$tmp/t.json" -s numa-flat \
		-s numa-bundle:keep=0 -s numa-bundle | tail -n 3
	echo
done

echo "== per-core peaks side by side: 100000 blocks, 16 cores, seed $seed"
"$gen" --cores 16 --blocks 100000 --seed "$seed" -o "$tmp/t.json"
"$gen" compare "$tmp/t.json" | tail -n 17
