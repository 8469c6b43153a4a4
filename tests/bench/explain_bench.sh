#!/usr/bin/env bash
# explain against `replay -s recorded` on the same mtrace file, in the same
# run, alternating (the machine is shared: the ratio is the figure): the
# issue's bound is explain under 3x the replay. The file comes from
# tests/bench/mtrace_gen.py (N events, seeded), or is given.
# Usage: tests/bench/explain_bench.sh [BUILD] [EVENTS|FILE] [ROUNDS]
set -euo pipefail
build=${1:-build}
what=${2:-10000000}
rounds=${3:-2}
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -f "$what" ]; then
	f=$what
else
	f=$dir/t.mtrace
	python3 "$src/tests/bench/mtrace_gen.py" "$what" "$f" >/dev/null
fi
echo "# $(uptime)"
echo "round,command,seconds,cpu_seconds,peak_rss_kb"
sum_r=0 sum_e=0 cpu_r=0 cpu_e=0
for r in $(seq "$rounds"); do
	for cmd in replay explain; do
		if [ $cmd = replay ]; then
			args=(replay "$f" -s recorded --no-progress)
		else
			args=(explain "$f")
		fi
		/usr/bin/time -f '%e %U %S %M' -o "$dir/time" "$build/allocscope" "${args[@]}" >/dev/null
		read -r s u sy kb <"$dir/time"
		cpu=$(echo "$u + $sy" | bc -l)
		printf '%s,%s,%.2f,%.2f,%s\n' "$r" "$cmd" "$s" "$cpu" "$kb"
		if [ $cmd = replay ]; then
			sum_r=$(echo "$sum_r + $s" | bc -l); cpu_r=$(echo "$cpu_r + $cpu" | bc -l)
		else
			sum_e=$(echo "$sum_e + $s" | bc -l); cpu_e=$(echo "$cpu_e + $cpu" | bc -l)
		fi
	done
done
printf '# explain / replay -s recorded: %.2fx wall, %.2fx CPU\n' \
	"$(echo "$sum_e / $sum_r" | bc -l)" "$(echo "$cpu_e / $cpu_r" | bc -l)"
