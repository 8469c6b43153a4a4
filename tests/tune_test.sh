#!/bin/sh
# allocscope tune (TAP): every row of its JSON carries the figures
# `replay -s SPEC --json` gives for the row's spec, per device; the
# recommended setting on eor_nn.pickle is the worked example's
# (docs/strategies-cuda-caching.md); each real snapshot in
# ../shared/snapshots is tuned (its time printed); bad arguments exit 2 with no
# output file. A synthetic recording that runs out of memory
# (tests/cuda_sim.py) stands in when ../shared is absent. Needs AS_EXE,
# AS_SOURCE_DIR; reads AS_SHARED_DIR; skips without python3.
set -u
exe=${AS_EXE:?AS_EXE is not set}
src=${AS_SOURCE_DIR:?AS_SOURCE_DIR is not set}
shared=${AS_SHARED_DIR:-}
if ! command -v python3 >/dev/null 2>&1; then
	echo "1..0 # SKIP python3 is not installed"
	exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"

# rows FILE.json: "SPEC<TAB>DEVICE<TAB>figures" per row, the figures in
# the order replay_rows prints them.
rows() {
	python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "allocscope-tune" and d["version"] == 1
for t in d["traces"]:
    for s in t["spaces"]:
        for r in s["rows"]:
            print("%s\t%s\t%d %d %d %d %d" % (
                r["spec"], s["space"], r["reserved_peak"], r["reserved_made"],
                r["reserved_inherited"], r["fragmentation"], r["ooms"]))
EOF
}

# replay_row REPLAY.json DEVICE-INDEX: the same figures from replay's stats.
replay_row() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))["results"][0]["stats"]
k = sys.argv[2]
g = lambda name: int(st.get("%s.space%s" % (name, k), 0))
ooms = g("num_ooms") + g("oom_requests_failing") + (g("inherited_over_capacity") > 0)
print("%d %d %d %d %d" % (g("reserved_bytes.peak"), g("reserved_made"),
                          g("reserved_inherited"), g("fragmentation_at_peak"), ooms))
EOF
}

# agree NAME TRACE [tune options]: every row against its replay.
agree() {
	name=$1 trace=$2
	shift 2
	if ! "$exe" tune "$trace" --no-progress --json "$tmp/$name.json" "$@" \
		>/dev/null 2>"$tmp/err"; then
		sed 's/^/#   /' "$tmp/err"
		ok "$name: tune runs" 1
		return
	fi
	rows "$tmp/$name.json" >"$tmp/$name.rows" || { ok "$name: JSON" 1; return; }
	bad=0 count=0
	tab=$(printf '\t')
	while IFS="$tab" read -r spec dev figs; do
		count=$((count + 1))
		"$exe" replay "$trace" -s "$spec" --no-progress \
			--json "$tmp/r.json" >/dev/null 2>&1 || { bad=1; continue; }
		got=$(replay_row "$tmp/r.json" "${dev#cuda:}")
		if [ "$got" != "$figs" ]; then
			echo "#   $spec $dev: tune $figs, replay $got"
			bad=1
		fi
	done <"$tmp/$name.rows"
	echo "#   $name: $count rows compared"
	[ "$count" -gt 0 ] || bad=1
	ok "$name: each row's figures are replay -s SPEC's" $bad
}

if python3 "$src/tests/cuda_sim.py" "$tmp/oom.pickle" 4 --capacity 600000000 \
	>/dev/null 2>&1; then
	agree "synthetic recording that runs out of memory" "$tmp/oom.pickle" \
		--set max_split_size_mb=none,128 --set garbage_collection_threshold=none
	"$exe" tune "$tmp/oom.pickle" --no-progress --set expandable_segments=none \
		--set max_split_size_mb=none --set roundup_power2_divisions=none \
		--set garbage_collection_threshold=none >"$tmp/oom.txt" 2>&1
	grep -q "out of memory" "$tmp/oom.txt"
	ok "a recording that ran out of memory: tune says whether a setting avoids it" $?
else
	skip "synthetic recording that runs out of memory" "cuda_sim.py failed"
	skip "a recording that ran out of memory: tune says whether a setting avoids it" "cuda_sim.py failed"
fi

# Bad arguments: exit 2, nothing written.
"$exe" tune "$tmp/oom.pickle" --set nonsense=1 --json "$tmp/bad.json" \
	>/dev/null 2>&1
[ $? -eq 2 ] && [ ! -e "$tmp/bad.json" ]
ok "an unknown --set key exits 2 and writes nothing" $?
"$exe" tune "$tmp/oom.pickle" --capacity "1G,fraction=1" >/dev/null 2>&1
[ $? -eq 2 ]
ok "a --capacity that is not a size exits 2" $?

snaps=$shared/snapshots
if [ -z "$shared" ] || [ ! -f "$snaps/eor_nn.pickle" ]; then
	skip "eor_nn.pickle: rows agree with replay" "no ../shared/snapshots"
	skip "eor_nn.pickle: expandable segments recommended" "no ../shared/snapshots"
	skip "every real snapshot is tuned under the default grid" "no ../shared/snapshots"
	echo "1..$n"
	[ $failed -eq 0 ]
	exit
fi

agree "eor_nn.pickle" "$snaps/eor_nn.pickle"
# the worked example: expandable segments save the 20 MiB that 7.5 MiB
# tensors cutting 20 MiB segments leave unused
"$exe" tune "$snaps/eor_nn.pickle" --no-progress >"$tmp/eor.txt" 2>&1
grep -q "^recommended: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: saves 20.0 MiB" "$tmp/eor.txt"
ok "eor_nn.pickle: expandable segments recommended, 20 MiB saved" $?
if [ -f "$snaps/fidelity/cs336_2.7b_forward.pickle" ]; then
	agree "cs336_2.7b_forward.pickle (inherited memory given back)" \
		"$snaps/fidelity/cs336_2.7b_forward.pickle" \
		--set max_split_size_mb=none,128 --set roundup_power2_divisions=none \
		--set garbage_collection_threshold=none
	python3 - "$tmp/cs336_2.7b_forward.pickle (inherited memory given back).json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["traces"][0]["spaces"][0]
rec = [r for r in s["rows"] if r["recorded"]][0]
# the peak is what the recording inherited; the program gave it back and
# the peak from then on is the one a setting changes
sys.exit(0 if rec["reserved_inherited"] == rec["reserved_peak"] and
         rec["reserved_peak_after_release"] < rec["reserved_peak"] else 1)
EOF
	ok "cs336_2.7b_forward.pickle: the reserved peak is inherited, the peak after release is lower" $?
fi
if [ -f "$snaps/diverging/expandable_gnn.pickle" ]; then
	agree "expandable_gnn.pickle (three devices, an OOM)" \
		"$snaps/diverging/expandable_gnn.pickle" \
		--set max_split_size_mb=none,128 --set roundup_power2_divisions=none \
		--set garbage_collection_threshold=none
fi

# Every snapshot under the default grid; the times are printed as
# figures (docs/strategies-cuda-caching.md), not judged: a loaded machine
# or a sanitizer build is not the measure.
if [ -n "${AS_SANITIZED:-}" ]; then
	skip "every real snapshot is tuned under the default grid" \
		"the whole grid on every snapshot is the plain build's (built with $AS_SANITIZED)"
else
	bad=0
	for f in "$snaps"/*.pickle "$snaps"/*/*.pickle; do
		[ -f "$f" ] || continue
		t0=$(date +%s.%N)
		"$exe" tune "$f" --no-progress >/dev/null 2>"$tmp/err" || {
			bad=1
			sed 's/^/#   /' "$tmp/err"
		}
		t1=$(date +%s.%N)
		echo "#   tune ${f#$snaps/}: $(python3 -c "print('%.2f' % ($t1 - $t0))") s"
	done
	ok "every real snapshot is tuned under the default grid" $bad
fi

echo "1..$n"
[ $failed -eq 0 ]
