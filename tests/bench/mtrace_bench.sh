#!/usr/bin/env bash
# mtrace benchmark: parse rate, memory per buffer, and `replay -s recorded`
# of 10^6 and 10^7-event mtrace files (tests/bench/mtrace_gen.py), plain and
# zstd-compressed, against `sort -n` of the same file timed in the same run
# (the machine is shared: the ratio is the figure to compare).
# Usage: tests/bench/mtrace_bench.sh [BUILD] [EVENTS...]
set -euo pipefail
build=${1:-build}
shift || true
sizes=("${@:-1000000 10000000}")
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "# $(uptime)"
echo "stage,events,buffers,seconds,cpu_seconds,events_per_s,events_per_cpu_s,bytes_per_buffer,ratio_to_sort,model_bytes_per_buffer,cpu_ratio_to_sort"
for n in ${sizes[@]}; do
	read -r ev blocks peak < <(python3 "$src/tests/bench/mtrace_gen.py" "$n" "$dir/t.mtrace")
	/usr/bin/time -f '%e %U %S' -o "$dir/time" env LC_ALL=C sort -n "$dir/t.mtrace" >/dev/null
	read -r sort_s su ss <"$dir/time"
	sort_cpu=$(echo "$su + $ss" | bc -l)
	printf 'sort -n,%s,,%.3f,%.3f,,,,1.00,,1.00\n' "$ev" "$sort_s" "$sort_cpu"
	IFS=, read -r e b s cs rate crate bpb lb mb < <("$build/tests/bench_mtrace" "$dir/t.mtrace")
	[ "$b" = "$blocks" ] && [ "$lb" = "$peak" ] || { echo "count mismatch: $b/$blocks $lb/$peak" >&2; exit 1; }
	printf 'parse,%s,%s,%.3f,%s,%s,%s,%s,%.2f,%s,%.2f\n' "$e" "$b" "$s" "$cs" "$rate" "$crate" "$bpb" \
		"$(echo "$s / $sort_s" | bc -l)" "$mb" "$(echo "$cs / $sort_cpu" | bc -l)"
	zstd -q -T1 -c "$dir/t.mtrace" >"$dir/t.mtrace.zst"
	IFS=, read -r e b s cs rate crate bpb lb mb < <("$build/tests/bench_mtrace" "$dir/t.mtrace.zst")
	printf 'parse .zst,%s,%s,%.3f,%s,%s,%s,%s,%.2f,%s,%.2f\n' "$e" "$b" "$s" "$cs" "$rate" "$crate" "$bpb" \
		"$(echo "$s / $sort_s" | bc -l)" "$mb" "$(echo "$cs / $sort_cpu" | bc -l)"
	/usr/bin/time -f '%e %U %S %M' -o "$dir/time" "$build/allocscope" replay "$dir/t.mtrace.zst" \
		-s recorded --no-progress >/dev/null
	read -r rs ru rsy rkb <"$dir/time"
	printf 'replay -s recorded .zst,%s,%s,%.3f,%.3f,,,%.1f,%.2f,,%.2f\n' "$e" "$b" "$rs" \
		"$(echo "$ru + $rsy" | bc -l)" "$(echo "$rkb * 1024 / $b" | bc -l)" "$(echo "$rs / $sort_s" | bc -l)" \
		"$(echo "($ru + $rsy) / $sort_cpu" | bc -l)"
	rm -f "$dir"/t.*
done
