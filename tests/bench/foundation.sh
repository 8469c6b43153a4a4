#!/usr/bin/env bash
# Foundation benchmark: parse, lower bound, greedy-size and validate at
# 10^5, 10^6 and 10^7 buffers, against `sort -t, -k2,2n` over the same CSV
# timed in the same run. Usage: tests/bench/foundation.sh [BUILD] [SIZES...]
set -euo pipefail
build=${1:-build}
shift || true
sizes=("${@:-100000 1000000 10000000}")
exe="$build/tests/bench_foundation"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "stage,buffers,seconds,buffers_per_s,max_rss_bytes_per_buffer,result,ratio_to_sort"
for n in ${sizes[@]}; do
	"$exe" gen "$n" "$dir/t.csv"
	s0=$(date +%s.%N)
	LC_ALL=C sort -t, -k2,2n "$dir/t.csv" >/dev/null
	s1=$(date +%s.%N)
	sort_s=$(echo "$s1 - $s0" | bc -l)
	printf 'sort,%s,%.3f,,,,1.00\n' "$n" "$sort_s"
	for stage in parse lower_bound greedy-size validate; do
		line=$("$exe" "$stage" "$dir/t.csv")
		secs=$(echo "$line" | cut -d, -f3)
		printf '%s,%.2f\n' "$line" "$(echo "$secs / $sort_s" | bc -l)"
	done
	rm -f "$dir/t.csv"
done
