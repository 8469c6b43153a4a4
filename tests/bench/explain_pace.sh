#!/usr/bin/env bash
# explain against heaptrack_print on the same heaptrack recording, in the
# same run, alternating (the machine is shared: the ratios are the figure):
# The bound is at most 3x heaptrack_print's time and 4x its memory.
# Without FILE it records one: Python allocating through malloc, 10^7 and
# more allocations. WHOLE=1 also times the whole-trace path once (before).
# Usage: tests/bench/explain_pace.sh [BUILD] [FILE] [ROUNDS]
set -euo pipefail
build=${1:-build}
f=${2:-}
rounds=${3:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
command -v heaptrack_print >/dev/null || { echo "heaptrack_print is not installed" >&2; exit 1; }
if [ -z "$f" ]; then
	cat >"$dir/alloc.py" <<'EOF'
keep = []
def churn(n):
    out = []
    for i in range(n):
        out.append((str(i) * 3, i * 1.5))
        if len(out) > 2000:
            out = out[1000:]
    return out
def grow(n):
    for i in range(n):
        keep.append([i, str(i)])
for r in range(5):
    churn(400000)
    grow(60000)
keep.clear()
churn(200000)
EOF
	# The interpreter itself, not a wrapper script (pyenv's shims are).
	py=$(python3 -c 'import sys; print(sys.executable)')
	PYTHONMALLOC=malloc heaptrack -o "$dir/rec" "$py" "$dir/alloc.py" >/dev/null 2>&1
	f=$(ls "$dir"/rec.* | head -1)
fi
case "$f" in # both tools read the same bytes: decompressed
*.zst) zstd -dqc "$f" >"$dir/rec.heaptrack"; f=$dir/rec.heaptrack ;;
*.gz) gzip -dc "$f" >"$dir/rec.heaptrack"; f=$dir/rec.heaptrack ;;
esac
echo "# $(uptime)"
echo "# $(wc -c <"$f") bytes, $(grep -c '^+' "$f") allocations"
echo "round,command,seconds,peak_rss_kb"
declare -A sec kb
for r in $(seq "$rounds"); do
	for cmd in heaptrack_print explain; do
		if [ $cmd = explain ]; then
			args=("$build/allocscope" explain "$f")
		else
			args=(heaptrack_print "$f")
		fi
		/usr/bin/time -f '%e %M' -o "$dir/time" "${args[@]}" >/dev/null
		read -r s m <"$dir/time"
		echo "$r,$cmd,$s,$m"
		sec[$cmd]=$(echo "${sec[$cmd]:-0} + $s" | bc -l)
		kb[$cmd]=$(echo "if (${kb[$cmd]:-0} > $m) ${kb[$cmd]:-0} else $m" | bc -l)
	done
done
if [ "${WHOLE:-0}" = 1 ]; then
	ALLOCSCOPE_EXPLAIN_WHOLE=1 /usr/bin/time -f '%e %M' -o "$dir/time" \
		"$build/allocscope" explain "$f" >/dev/null
	read -r s m <"$dir/time"
	echo "1,explain (whole trace),$s,$m"
fi
printf '# explain / heaptrack_print: %.2fx wall, %.2fx peak memory\n' \
	"$(echo "${sec[explain]} / ${sec[heaptrack_print]}" | bc -l)" \
	"$(echo "${kb[explain]} / ${kb[heaptrack_print]}" | bc -l)"
