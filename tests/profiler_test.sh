#!/bin/sh
# PyTorch profiler traces end to end (TAP): the real sample in
# ../shared/profiler replays with its CPU and GPU as devices and renders; a
# directory holding a profiler trace whose name tells no format replays it
# beside the other traces; 10^6 memory events on one line load. Needs
# AS_EXE, AS_SOURCE_DIR; reads AS_SHARED_DIR (tests/test_profiler.c checks
# the sample's Total Allocated).
set -u
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
shared=${AS_SHARED_DIR:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"

# The devices "cpu" and "cuda:1" in replay --json, with their buffers.
sample=$shared/profiler/hta_resolver.pt.trace.json.gz
if [ -n "$shared" ] && [ -f "$sample" ]; then
	"$exe" replay --no-progress "$sample" -s recorded --json "$tmp/s.json" \
		--png "$tmp/s.png" >"$tmp/s.txt" 2>&1
	ok "the sample replays with -s recorded and renders" $?
	grep -q '"device": "cpu", "buffers": 620,' "$tmp/s.json" &&
		grep -q '"device": "cuda:1", "buffers": 13385,' "$tmp/s.json"
	ok "its CPU and its GPU are devices (620 and 13385 buffers)" $?
	grep -q '"valid": true, .*"failed": 0' "$tmp/s.json"
	ok "its recorded placement is valid" $?
	[ -s "$tmp/s.png" ]
	ok "its report is a PNG" $?
	# A directory: the sample named without an extension beside an ops file.
	mkdir "$tmp/dir"
	cp "$sample" "$tmp/dir/rank1-trace"
	printf 'alloc a 64 offset=0\nfree a\n' >"$tmp/dir/small.ops"
	echo 'not a trace' >"$tmp/dir/notes"
	"$exe" replay --no-progress "$tmp/dir" -s recorded >"$tmp/d.txt" 2>&1
	ok "a directory replays" $?
	grep -q "rank1-trace (profiler)" "$tmp/d.txt" &&
		grep -q "small.ops (ops)" "$tmp/d.txt" &&
		! grep -q "notes" "$tmp/d.txt"
	ok "its profiler trace is found by content, other files by name" $?
else
	for t in 1 2 3 4 5 6; do
		skip "the sample ($t)" "../shared is absent"
	done
fi

# 10^6 memory events on one line: an allocation and a free, 500000 times.
awk 'BEGIN {
	printf "{\"traceEvents\": ["
	for (i = 0; i < 1000000; i++)
		printf "%s{\"ph\": \"i\", \"name\": \"[memory]\", \"ts\": %d, " \
		       "\"args\": {\"Addr\": %d, \"Bytes\": %d, " \
		       "\"Total Allocated\": %d, " \
		       "\"Device Type\": 1, \"Device Id\": 0}}", \
		       i ? ", " : "", i, 4096 * (1 + int(i / 2) % 7), \
		       i % 2 ? -64 : 64, i % 2 ? 0 : 64
	print "]}"
}' >"$tmp/big.json"
"$exe" replay --no-progress "$tmp/big.json" -s recorded --json "$tmp/b.json" \
	>"$tmp/b.txt" 2>&1
ok "10^6 memory events on one line load" $?
grep -q '"events": 1000000, "buffers": 500000,' "$tmp/b.json"
ok "as 500000 buffers and 10^6 events" $?

echo "1..$n"
[ "$failed" -eq 0 ]
