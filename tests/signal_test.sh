#!/bin/sh
# Every catchable signal that ends a process, during a long replay: the
# process ends as that signal ends it (its shell sees 128 + signal), and
# neither the output nor its temporary file (a hidden .asXXXXXXXX beside
# it) is left behind. An ignored SIGHUP (nohup) stays ignored.
exe=${AS_EXE:?AS_EXE names the allocscope binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A trace long enough to still be running when the signal comes: 4 * 10^5
# buffers, all strategies.
awk 'BEGIN { for (i = 0; i < 400000; i++) {
	printf "alloc b%d %d\n", i, 64 + (i * 7919) % 4096
	if (i >= 64) printf "free b%d\n", i - 64 } }' >"$tmp/long.ops"
# A shell starts background jobs with SIGINT and SIGQUIT ignored; env puts
# them back to their defaults, as a foreground run has them.
dfl=
env --default-signal=INT true 2>/dev/null && dfl="env --default-signal=INT,QUIT"
# No core files from SIGQUIT, SIGXCPU, SIGXFSZ.
ulimit -c 0 2>/dev/null
sigs="HUP INT QUIT TERM USR1 USR2 ALRM XCPU XFSZ PIPE VTALRM PROF"
echo "1..13"
n=0
# start DIR [env...]: a replay writing DIR/r.json in the background, once
# its temporary file exists ($pid; $seen: the temporary file's name).
start() {
	d=$1
	shift
	mkdir "$d"
	"$@" $dfl "$exe" replay --no-progress "$tmp/long.ops" --json "$d/r.json" \
		>/dev/null 2>&1 &
	pid=$!
	k=0
	while [ -z "$(ls -A "$d")" ] && [ $k -lt 200 ]; do
		sleep 0.05; k=$((k + 1))
	done
	seen=$(ls -A "$d")
	sleep 0.2
}
for sig in $sigs; do
	n=$((n + 1))
	start "$tmp/out$n"
	kill -$sig $pid
	wait $pid
	status=$?
	# The status names the signal (kill -l turns 128 + N into its name).
	got=none
	[ "$status" -gt 128 ] && got=$(kill -l $((status - 128)))
	left=$(ls -A "$tmp/out$n")
	name="sig${sig}_during_a_run_ends_the_run_by_it_and_leaves_no_file"
	case $seen in "" | r.json) left="(no temporary file seen) $left" ;; esac
	if [ "$got" = "$sig" ] && [ -z "$left" ]; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		echo "# status $status, left: $left"
	fi
done
# nohup's ignored SIGHUP is kept: the run goes on; SIGTERM then ends it.
n=$((n + 1))
start "$tmp/nohup" env --ignore-signal=HUP
kill -HUP $pid
sleep 0.3
alive=no
kill -0 $pid 2>/dev/null && alive=yes
kill -TERM $pid
wait $pid
status=$?
left=$(ls -A "$tmp/nohup")
if [ $alive = yes ] && [ $status -eq 143 ] && [ -z "$left" ]; then
	echo "ok $n - an_inherited_ignored_sighup_stays_ignored"
else
	echo "not ok $n - an_inherited_ignored_sighup_stays_ignored"
	echo "# alive after HUP: $alive, status $status, left: $left"
fi
