#!/usr/bin/env bash
# PyTorch memory snapshots end to end (TAP): every real snapshot in
# ../shared/snapshots and the hand-made ones of gen_snapshots.py must give,
# per device, the lower bound and buffer count of an independent reader
# (snapshot_ref.py, Python's pickle with every import refused), replay valid
# with -s recorded and every strategy that applies, render to PNG and open
# in the viewer (when AS_VIEWER is set). Needs AS_EXE, AS_SOURCE_DIR; reads
# AS_SHARED_DIR.
set -u
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
shared=${AS_SHARED_DIR:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"


if ! command -v python3 >/dev/null; then
	echo "1..0 # SKIP python3 is not installed"
	exit 0
fi

# Per device "cuda:N lower_bound=X buffers=Y [reserved_peak=Z]" from
# replay --json.
figures() {
	python3 - "$1" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
devs = t.get("devices")
if devs is None:  # nothing recorded: all the figures are the totals
    print(f"total lower_bound={t['lower_bound']} buffers={t['buffers']}")
else:
    for d in devs:
        r = f" reserved_peak={d['reserved_peak']}" if "reserved_peak" in d else ""
        print(f"{d['device']} lower_bound={d['lower_bound']} buffers={d['buffers']}{r}")
EOF
}

# The reference's figures, summed when ours has no per-device list.
ref_figures() {
	python3 "$src/tests/snapshot_ref.py" "$1" >"$tmp/ref" || return 1
	if grep -q '^total' "$tmp/ours"; then
		awk '{split($2, a, "="); split($3, b, "="); lb += a[2]; nb += b[2]}
		     END {printf "total lower_bound=%d buffers=%d\n", lb, nb}' "$tmp/ref"
	else
		cat "$tmp/ref"
	fi
}

python3 "$src/tests/gen_snapshots.py" "$tmp/gen"
ok "gen_snapshots.py writes hand-made snapshots with Python's pickle" $?

files=("$tmp"/gen/*.pickle)
if [ -n "$shared" ] && [ -d "$shared/snapshots" ]; then
	files+=("$shared"/snapshots/*.pickle)
	# snapshots cuda-caching was made to reproduce
	[ -d "$shared/snapshots/fidelity" ] &&
		files+=("$shared"/snapshots/fidelity/*.pickle)
else
	skip "the real snapshots of ../shared" "../shared is absent"
fi

for f in "${files[@]}"; do
	b=$(basename "$f")
	rm -f "$tmp/out.json"
	"$exe" replay "$f" -s recorded --json "$tmp/out.json" 2>"$tmp/err" >/dev/null
	rc=$?
	[ $rc -eq 0 ] && figures "$tmp/out.json" >"$tmp/ours" &&
		ref_figures "$f" >"$tmp/want" && cmp -s "$tmp/ours" "$tmp/want"
	s=$?
	if [ $s -ne 0 ]; then
		echo "#   $b: rc=$rc; ours / reference:"
		sed 's/^/#     /' "$tmp/ours" "$tmp/want" "$tmp/err" 2>/dev/null
	fi
	ok "$b: per device, the lower bound, buffer count and reserved peak equal the reference reader's" $s

	"$exe" replay "$f" --no-progress >"$tmp/table" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 0 ] && grep -q '^recorded ' "$tmp/table" &&
		grep -q '^greedy-size ' "$tmp/table" && grep -q '^bestfit ' "$tmp/table" &&
		grep -q '^strip ' "$tmp/table" && ! grep -q ' NO ' "$tmp/table"
	s=$?
	[ $s -eq 0 ] || sed 's/^/#   /' "$tmp/table" "$tmp/err"
	ok "$b: recorded and every offline planner replay it with valid plans" $s

	"$exe" replay "$f" -s recorded -s greedy-size --png "$tmp/out.png" \
		>/dev/null 2>&1 && [ -s "$tmp/out.png" ]
	ok "$b: renders to PNG" $?

	if [ -n "${AS_VIEWER:-}" ]; then
		env -u DISPLAY -u WAYLAND_DISPLAY SDL_VIDEODRIVER=dummy \
			"$AS_VIEWER" "$f" -s recorded -s bestfit --screenshot "$tmp/view.png" >/dev/null 2>&1 &&
			[ -s "$tmp/view.png" ]
		ok "$b: opens in the viewer" $?
	fi
	rm -f "$tmp/out.png" "$tmp/view.png"
done

# The three-device file: its OOM and the expandable device's reserve.
"$exe" replay "$tmp/gen/three_devices.pickle" -s recorded --json "$tmp/three.json" >/dev/null 2>&1
python3 - "$tmp/three.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
ooms = t["ooms"]
assert len(ooms) == 1, ooms
o = ooms[0]
assert o["device"] == "cuda:2" and o["size"] == 80 << 30, o
assert o["device_free"] == 123 << 20 and o["time"] > 0, o
assert [d["device"] for d in t["devices"]] == ["cuda:0", "cuda:1", "cuda:2"]
assert all(d["reserved_peak"] >= d["lower_bound"] for d in t["devices"]), t
EOF
ok "three_devices.pickle: the OOM of cuda:2 and the reserved peak of each device are in the JSON" $?

# Expandable segments (cuda:1 maps pages into PyTorch's virtual range) and
# the others: the recorded plan's peak reads as memory, not as the distance
# between virtual ranges (a 2 MiB page at most between two ranges).
python3 - "$tmp/three.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
reserved = {d["device"]: d["reserved_peak"] for d in j["trace"]["devices"]}
rec = [r for r in j["results"] if r["strategy"] == "recorded"][0]
for sp in rec["spaces"]:
    assert sp["peak"] <= reserved[sp["name"]] + (8 << 20), (sp, reserved)
EOF
ok "three_devices.pickle: the recorded peak of every device, expandable too, is within 8 MiB of its reserved peak" $?

# Where cuda-caching leaves a recording: none on two_holes.pickle (the lower
# address wins among equal holes, though the device gave it later), the
# edited allocation on divergence.pickle, with both sides.
"$exe" check "$tmp/gen/two_holes.pickle" -s cuda-caching >"$tmp/c0" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q '^no divergence' "$tmp/c0" &&
	grep -q '5 allocations compared, 5 in the recorded block' "$tmp/c0"
s=$?
[ $s -eq 0 ] || sed 's/^/#   /' "$tmp/c0"
ok "check -s cuda-caching: two_holes.pickle has no divergence (exit 0)" $s
"$exe" check "$tmp/gen/divergence.pickle" -s cuda-caching >"$tmp/c1" 2>&1
rc=$?
[ $rc -eq 1 ] &&
	grep -q '5 allocations compared, 4 in the recorded block' "$tmp/c1" &&
	grep -q '^first divergence: step 5, cuda:0, buffer b7f8011200000_0 (#[0-9]*, 2097152 B asked): block chosen$' "$tmp/c1" &&
	grep -q '^  model: *segment 0x7f8008000000 (20.0 MiB, large pool, a cached block) at +18874368$' "$tmp/c1" &&
	grep -q '^  recorded: *segment 0x7f8010000000 (20.0 MiB, large pool, a cached block) at +18874368$' "$tmp/c1"
s=$?
[ $s -eq 0 ] || sed 's/^/#   /' "$tmp/c1"
ok "check -s cuda-caching: divergence.pickle names the edited allocation and both blocks (exit 1)" $s
"$exe" check "$tmp/gen/old_writer.pickle" -s greedy-size >"$tmp/c2" 2>&1
[ $? -eq 2 ] && grep -q 'compares itself with no recording' "$tmp/c2"
ok "check -s with a strategy that replays no recording says so (exit 2)" $?

# allocscope view runs the viewer beside it.
if [ -n "${AS_VIEWER:-}" ]; then
	env -u DISPLAY -u WAYLAND_DISPLAY SDL_VIDEODRIVER=dummy \
		"$exe" view "$tmp/gen/old_writer.pickle" --screenshot "$tmp/v.png" >/dev/null 2>&1 &&
		[ -s "$tmp/v.png" ]
	ok "allocscope view SNAPSHOT runs the viewer" $?
fi

echo "1..$n"
[ $failed -eq 0 ]
