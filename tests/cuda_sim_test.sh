#!/bin/sh
# cuda-caching against synthetic snapshots (tests/cuda_sim.py): recordings
# that start mid-run, with expandable segments, several devices and streams,
# a device that runs out of memory, and one that fills without running out
# (the allocator empties its cache and retries). The model must put at
# least 95% of the blocks where the writer's allocator did, and reach the
# same reserved peak. Skips when python3 is missing.
set -u
exe=${AS_EXE:?AS_EXE is not set}
src=${AS_SOURCE_DIR:?AS_SOURCE_DIR is not set}
if ! command -v python3 >/dev/null 2>&1; then
	echo "1..0 # SKIP python3 is not installed"
	exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
# name | writer arguments | strategy spec
check() {
	n=$((n + 1))
	name=$1 args=$2 spec=$3
	if ! python3 "$src/tests/cuda_sim.py" "$tmp/$name.pickle" $args ||
	   ! "$exe" replay "$tmp/$name.pickle" -s "$spec" --no-progress \
		--json "$tmp/$name.json" >/dev/null 2>"$tmp/err"; then
		echo "not ok $n - $name # replay failed"
		sed 's/^/#   /' "$tmp/err"
		fail=1
		return
	fi
	if python3 - "$tmp/$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
s = r["stats"]
print("#   blocks_reproduced %.4f segments_reproduced %.4f reserved peak %d"
      " recorded %d" % (s["blocks_reproduced"], s["segments_reproduced"],
                        s["reserved_bytes.peak"], s["recorded_reserved_peak"]))
ok = (r["valid"] and s["blocks_reproduced"] >= 0.95 and
      s["segments_reproduced"] >= 0.95 and
      abs(s["reserved_bytes.peak"] - s["recorded_reserved_peak"]) <=
      0.01 * s["recorded_reserved_peak"])
sys.exit(0 if ok else 1)
PY
	then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		fail=1
	fi
}
check mid_run_recording_is_reproduced "1" cuda-caching
check expandable_recording_is_reproduced "2 --expandable" cuda-caching
check two_devices_and_two_streams_are_reproduced \
	"3 --devices 2 --streams 2" cuda-caching
check recorded_ooms_teach_the_device_size "4 --capacity 600000000" cuda-caching
# full without an OOM: the allocator gave its cache back and retried
check a_release_and_retry_teaches_the_device_size "4 --capacity 1500000000" \
	cuda-caching
check expandable_recording_with_ooms_and_streams_is_reproduced \
	"5 --expandable --capacity 600000000 --streams 2" cuda-caching
echo "1..$n"
exit $fail
