#!/bin/sh
# Every input format at scale: `replay -s recorded`, `replay -s bfc` and
# `check` on one workload written in each format (text ops, MiniMalloc CSV,
# JSON, glibc mtrace, raw heaptrack, and the ops file gzip'ed and zstd'ed),
# against `sort -n` of the same file timed in the same run. Memory is the
# peak RSS over the buffers the trace holds.
#
# usage: tests/bench/formats_bench.sh [BUILD_DIR] [EVENTS]   (default: build 10000000)
# FORMATS="ops csv ..." picks formats (default: all seven). Times are wall
# and CPU (user + system) seconds: on a shared machine the CPU column is the
# steadier one.
#
# The workload (seeded awk): EVENTS allocs and frees, about 10000 buffers
# live, sizes log-uniform in [16 B, 64 KiB), each buffer in a 64 KiB slot
# of a slab (the slot a free gives back is the next one taken), so every
# format carries a valid recorded placement (offsets, or addresses for
# mtrace and heaptrack) and `check` has something to check.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-"$src/build"}
events=${2:-10000000}
exe="$build/allocscope"
[ -x "$exe" ] || { echo "build first: meson setup build && ninja -C build" >&2; exit 2; }
tmp=${TMPDIR:-/tmp}/formats_bench.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT

gen() { # gen FORMAT > file
	awk -v n="$events" -v fmt="$1" -v cf="$tmp/count" 'BEGIN {
		srand(7); live = 0; nslots = 0; nfree = 0; id = 0; target = 10000
		if (fmt == "csv") print "id,lower,upper,size,offset"
		if (fmt == "json") { printf "{\"format\": \"allocscope-trace\", \"version\": 1,\n \"buffers\": [\n"; sep = "" }
		if (fmt == "mtrace") print "= Start"
		if (fmt == "heaptrack") { print "v 10400 3"; print "x 4 prog"; print "t 401000 0" }
		for (t = 0; t < n; t++) {
			if (live == 0 || (live < 2 * target && rand() * 2 * target >= live)) {
				size = int(2 ^ (4 + rand() * 12))
				slot = nfree ? freeslot[--nfree] : nslots++
				off = slot * 65536
				name[live] = id; sz[live] = size; st[live] = t; of[live] = off; sl[live] = slot
				live++
				if (fmt == "ops") printf "alloc b%d %d 16 offset=%d\n", id, size, off
				else if (fmt == "mtrace") printf "@ ./prog:[0x401000] + 0x%x 0x%x\n", 268435456 + off, size
				else if (fmt == "heaptrack") printf "+ %x 1 %x\n", size, 268435456 + off
				id++
			} else {
				j = int(rand() * live)
				end_one(j, t)
				live--
				name[j] = name[live]; sz[j] = sz[live]; st[j] = st[live]; of[j] = of[live]; sl[j] = sl[live]
			}
		}
		if (fmt == "csv" || fmt == "json")
			for (j = 0; j < live; j++) end_one(j, n)
		if (fmt == "json") print "]}"
		print id > cf
	}
	function end_one(j, t) {
		freeslot[nfree++] = sl[j]
		if (fmt == "ops") printf "free b%d\n", name[j]
		else if (fmt == "mtrace") printf "@ ./prog:[0x401000] - 0x%x\n", 268435456 + of[j]
		else if (fmt == "heaptrack") printf "- %x\n", 268435456 + of[j]
		else if (fmt == "csv") printf "b%d,%d,%d,%d,%d\n", name[j], st[j], t, sz[j], of[j]
		else if (fmt == "json") {
			printf "%s  {\"name\": \"b%d\", \"size\": %d, \"start\": %d, \"end\": %d, \"offset\": %d}\n", sep, name[j], sz[j], st[j], t, of[j]
			sep = ","
		}
	}'
}

timed() { # timed COMMAND... -> "SECONDS MAXRSS_KB CPU_SECONDS" (fails when the command does)
	/usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" ||
		{ echo "failed: $* ($(head -n 1 "$tmp/err"))" >&2; return 1; }
	awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$tmp/time"
}

echo "# $(uptime)"
echo "# $events events, $(nproc) cores"
printf '%-10s %-9s %10s %9s %8s %8s %12s %8s %10s %10s\n' format command buffers bytes_MB wall_s cpu_s ev_per_cpu_s B_buf vs_sort cpu_vs_sort
for f in ${FORMATS:-ops csv json mtrace heaptrack ops.gz ops.zst}; do
	case $f in
	ops.gz | ops.zst) [ -f "$tmp/t.ops" ] || gen ops > "$tmp/t.ops" ;;
	esac
	case $f in
	ops.gz) gzip -1 -c "$tmp/t.ops" > "$tmp/t.ops.gz" ;;
	ops.zst) zstd -q -1 -c "$tmp/t.ops" > "$tmp/t.ops.zst" ;;
	*) gen "$f" > "$tmp/t.$f" ;;
	esac
	file=$tmp/t.$f
	mb=$(($(wc -c < "$file") / 1000000))
	set -- $(timed sh -c 'case "$1" in *.gz) gzip -dc "$1";; *.zst) zstd -qdc "$1";; *) cat "$1";; esac | LC_ALL=C sort -n' sh "$file")
	sort_s=$1 sort_cpu=$3
	bufs=$(cat "$tmp/count")
	printf '%-10s %-9s %10s %9s %8.2f %8.2f %12s %8s %10s %10s\n' "$f" "sort -n" "$bufs" "$mb" "$sort_s" "$sort_cpu" - - 1.00 1.00
	for cmd in recorded bfc check; do
		case $cmd in
		check) run="check $file" ;;
		*) run="replay --no-progress -s $cmd $file" ;;
		esac
		# shellcheck disable=SC2086
		if ! r=$(timed "$exe" $run); then
			printf '%-10s %-9s %10s %9s %8s %8s %12s %8s %10s %10s\n' "$f" "$cmd" "$bufs" "$mb" failed - - - - -
			continue
		fi
		set -- $r
		awk -v f="$f" -v c="$cmd" -v b="$bufs" -v mb="$mb" -v s="$1" -v kb="$2" -v cpu="$3" -v e="$events" -v ref="$sort_s" -v rcpu="$sort_cpu" 'BEGIN {
			printf "%-10s %-9s %10d %9d %8.2f %8.2f %12.0f %8.1f %10.2f %10.2f\n", f, c, b, mb, s, cpu, e / (cpu > 0 ? cpu : 0.01), kb * 1024 / b, s / (ref > 0 ? ref : 0.01), cpu / (rcpu > 0 ? rcpu : 0.01)
		}'
	done
	case $f in ops | ops.gz | ops.zst) ;; *) rm -f "$file" ;; esac
done
echo "# $(uptime)"
