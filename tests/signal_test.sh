#!/bin/sh
# SIGINT and SIGTERM during a long replay: exit status 128 + signal, and
# neither the output nor a temporary file is left behind.
exe=${AS_EXE:?AS_EXE names the allocscope binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A trace long enough to still be running when the signal comes: 4 * 10^5
# buffers, all strategies.
awk 'BEGIN { for (i = 0; i < 400000; i++) {
	printf "alloc b%d %d\n", i, 64 + (i * 7919) % 4096
	if (i >= 64) printf "free b%d\n", i - 64 } }' >"$tmp/long.ops"
echo "1..2"
n=0
for sig in INT TERM; do
	n=$((n + 1))
	mkdir "$tmp/out$n"
	"$exe" replay --no-progress "$tmp/long.ops" --json "$tmp/out$n/r.json" \
		>/dev/null 2>&1 &
	pid=$!
	# Wait until the temporary file exists, then interrupt.
	k=0
	while [ -z "$(ls "$tmp/out$n")" ] && [ $k -lt 200 ]; do
		sleep 0.05; k=$((k + 1))
	done
	sleep 0.2
	kill -$sig $pid
	wait $pid
	status=$?
	case $sig in INT) want=130 ;; TERM) want=143 ;; esac
	left=$(ls "$tmp/out$n")
	if [ "$status" -eq "$want" ] && [ -z "$left" ]; then
		echo "ok $n - sig${sig}_during_a_run_exits_${want}_and_leaves_no_file"
	else
		echo "not ok $n - sig${sig}_during_a_run_exits_${want}_and_leaves_no_file"
		echo "# status $status, left: $left"
	fi
done
