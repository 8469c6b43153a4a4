#!/bin/sh
# Benchmark of the bfc strategy: replay speed in events per second on random
# traces of 10^6 and 10^7 operations, against replaying the same operations
# with glibc malloc/free (tests/bench/bfc_bench_malloc.c) in the same run.
#
# usage: tests/bench/bfc_bench.sh [BUILD_DIR] [OPS...]     (default: build 1000000 10000000)
# REPS=N (default 3) runs each measurement N times and keeps the fastest,
# which tames the noise of a shared machine.
# Two workloads, both ~10000 live buffers, bfc with total=64G growth=1:
#   tensors: sizes log-uniform in [256 B, 8 MiB), one allocation in eight
#            aligned to 512 B..64 KiB (glibc pays for mmap and trimming);
#   small:   sizes log-uniform in [16 B, 8 KiB), alignment 64 (glibc's
#            fastest case, served from its bins and tcache).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-"$src/build"}
[ $# -gt 0 ] && shift
sizes=${*:-"1000000 10000000"}
reps=${REPS:-3}
exe="$build/allocscope"
[ -x "$exe" ] || { echo "build first: meson setup build && ninja -C build" >&2; exit 2; }
tmp=${TMPDIR:-/tmp}/bfc_bench.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/malloc_replay" "$here/bfc_bench_malloc.c"

gen() { # gen OPS SEED LGMIN LGSPAN ALIGNED_FRACTION > trace
	awk -v n="$1" -v seed="$2" -v lgmin="$3" -v lgspan="$4" -v afrac="$5" 'BEGIN {
		srand(seed); live = 0; next_id = 0; target = 10000
		print "config total=64G growth=1"
		for (i = 0; i < n; i++) {
			if (live == 0 || (live < 2 * target && rand() * 2 * target >= live)) {
				lg = lgmin + int(rand() * lgspan)
				size = int(2 ^ lg * (1 + rand()))
				if (rand() < afrac)
					printf "alloc b%d %d %d\n", next_id, size, 2 ^ (9 + int(rand() * 8))
				else
					printf "alloc b%d %d\n", next_id, size
				ids[live++] = next_id++
			} else {
				j = int(rand() * live)
				printf "free b%d\n", ids[j]
				ids[j] = ids[--live]
			}
		}
	}'
}

printf '%-8s %-10s %10s %10s %14s %10s %14s %8s\n' workload ops events bfc_s bfc_ev_per_s glibc_s glibc_ev_per_s ratio
for n in $sizes; do
	for w in tensors small; do
		case $w in
		tensors) gen "$n" 42 8 15 0.125 > "$tmp/t.ops" ;;
		small) gen "$n" 42 4 9 0 > "$tmp/t.ops" ;;
		esac
		ms= gs=
		r=0
		while [ "$r" -lt "$reps" ]; do
			json=$("$exe" replay "$tmp/t.ops" -s bfc --json -)
			m=$(printf '%s\n' "$json" | sed -n 's/.*"plan_ms": \([0-9.]*\).*/\1/p')
			failed=$(printf '%s\n' "$json" | sed -n 's/.*"failed": \([0-9]*\).*/\1/p')
			out=$("$tmp/malloc_replay" "$tmp/t.ops")
			ev=$(echo "$out" | awk '{print $2}')
			g=$(echo "$out" | awk '{print $4}')
			ms=$(awk -v a="$ms" -v b="$m" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
			gs=$(awk -v a="$gs" -v b="$g" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
			r=$((r + 1))
		done
		awk -v w="$w" -v n="$n" -v ev="$ev" -v ms="$ms" -v gs="$gs" -v f="$failed" 'BEGIN {
			bs = ms / 1000
			printf "%-8s %-10d %10d %10.3f %14.0f %10.3f %14.0f %7.2fx\n", w, n, ev, bs, ev / bs, gs, ev / gs, bs / gs
			if (f > 0) printf "  (bfc failed %d allocations)\n", f
		}'
	done
done
echo "ratio = bfc seconds / glibc seconds (below 1: bfc replays faster); best of $reps runs"
