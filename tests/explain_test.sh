#!/usr/bin/env bash
# allocscope explain and diff --by end to end (TAP). Generated inputs
# (explain_ref.py --gen: an annotated two-device snapshot, a heaptrack file)
# always; the real snapshots of ../shared (fidelity/, diverging/) when present; a
# heaptrack recording of a Python program made here when heaptrack is
# installed. Each is checked against explain_ref.py, an independent
# reference (peak bytes, top 10 groups by whole stack). Then the stages in
# the text, JSON and Markdown, the JSON's shape, several files (ranks), a
# strategy's fragmentation, diff --by of a recording against itself and
# against one where a call site allocates more, and the usage errors.
# Needs AS_EXE, AS_SOURCE_DIR; reads AS_SHARED_DIR.
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
ref=$src/tests/explain_ref.py

# agrees FILE [RULE]: explain and the reference agree by stack, frame and
# (snapshots) category, with --rule RULE (their lines as comments).
agrees() {
	local f=$1
	shift
	local rules=()
	[ $# -ge 1 ] && rules=(--rule "$1")
	python3 "$ref" --check "$exe" "${rules[@]}" "$f" >"$tmp/check" 2>&1
	local s=$?
	grep -v '^1\.\.' "$tmp/check" |
		sed 's/^\(not \)\{0,1\}ok [0-9]* - //; s/^#   //; s/^/#   /'
	return $s
}

python3 "$ref" --gen "$tmp/gen"
ok "explain_ref.py writes the generated inputs" $?
for f in "$tmp"/gen/*; do
	agrees "$f"
	ok "explain agrees with the reference on generated $(basename "$f")" $?
done

if [ -n "$shared" ] && [ -d "$shared/snapshots" ]; then
	for f in "$shared"/snapshots/*.pickle "$shared"/snapshots/fidelity/*.pickle "$shared"/snapshots/diverging/*.pickle; do
		[ -e "$f" ] || continue
		agrees "$f"
		ok "explain agrees with the reference on ${f#"$shared"/}" $?
	done
else
	skip "explain agrees with the reference on the real snapshots" "../shared/snapshots is absent"
fi

# A recording made here: Python allocating through malloc (the interpreter
# itself, not a wrapper script, so that heaptrack sees one process).
py=$(python3 -c 'import sys; print(sys.executable)')
if ! command -v heaptrack >/dev/null; then
	skip "explain agrees with the reference on a heaptrack recording" "heaptrack is not installed"
else
	cat >"$tmp/prog.py" <<'EOF'
def rows(n):
    return [{"k": i, "v": [float(j) for j in range(i % 20)]} for i in range(n)]
def blobs(n):
    return [bytearray(1000 + i) for i in range(n)]
a = rows(3000)
b = blobs(200)
del a
c = rows(1000)
EOF
	(cd "$tmp" && PYTHONMALLOC=malloc heaptrack -o "$tmp/rec" "$py" -I "$tmp/prog.py") >/dev/null 2>&1
	f=$(ls "$tmp"/rec.* 2>/dev/null | head -1)
	if [ -z "$f" ]; then
		skip "explain agrees with the reference on a heaptrack recording" "heaptrack wrote nothing"
	else
		agrees "$f"
		ok "explain agrees with the reference on a heaptrack recording of Python" $?
		# explain reads heaptrack files in one pass; the whole trace
		# (ALLOCSCOPE_EXPLAIN_WHOLE, for this comparison) says the same.
		s=0
		for opts in "" "--by frame --top 0" "--top 3 --frames 2"; do
			# shellcheck disable=SC2086
			"$exe" explain "$f" $opts --json "$tmp/one.json" >"$tmp/one.txt" &&
				ALLOCSCOPE_EXPLAIN_WHOLE=1 "$exe" explain "$f" $opts \
					--json "$tmp/whole.json" >"$tmp/whole.txt" &&
				cmp -s "$tmp/one.txt" "$tmp/whole.txt" &&
				cmp -s "$tmp/one.json" "$tmp/whole.json" ||
				{ echo "#   explain $opts: one pass and whole trace differ"; s=1; }
		done
		ok "explain in one pass says what the whole trace says on a heaptrack recording of Python" $s
	fi
fi

# Stages: in the text, the JSON and the Markdown.
snap=$tmp/gen/gen_annotated.pickle
"$exe" explain "$snap" --json "$tmp/e.json" --markdown "$tmp/e.md" >"$tmp/e.txt"
s=$?
for w in forward backward backward.inner "open (no END)"; do
	grep -q -- "$w" "$tmp/e.txt" || { echo "#   text lacks '$w'"; s=1; }
done
grep -q 'during: backward > backward.inner' "$tmp/e.txt" ||
	{ echo "#   no 'during: backward > backward.inner' line"; s=1; }
ok "the text names every annotation stage and the stages at the peak" $s
python3 - "$tmp/e.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "allocscope-explain" and d["version"] == 2, d.keys()
assert d["by"] == "stack"
t = d["traces"][0]
assert t["trace"].endswith("gen_annotated.pickle")
names = set()
for s in t["spaces"]:
    for k in ("space", "peak_bytes", "peak_time", "groups", "stages",
              "temporaries", "never_freed", "stages_at_peak"):
        assert k in s, k
    g = s["groups"]
    assert [x["bytes"] for x in g] == sorted((x["bytes"] for x in g), reverse=True)
    for x in g:
        assert set(("key", "bytes", "count", "frames")) <= set(x), x
        assert all("CachingAllocator" not in f for f in x["frames"]), x
    for st in s["stages"]:
        assert st["at_start"] <= st["peak"] and st["at_end"] <= st["peak"], st
        assert st["start"] <= st["peak_time"] <= max(st["start"], st["end"]), st
        names.add(st["name"])
assert {"forward", "backward", "backward.inner", "open"} <= names, names
assert sum(s["peak_bytes"] for s in t["spaces"]) == t["peak_bytes"]
EOF
ok "the JSON has its format, spaces, groups largest first, frames without the allocator, and every stage" $?
grep -q 'backward › backward.inner' "$tmp/e.md" && grep -q '^| bytes | share | count | top frames |' "$tmp/e.md"
ok "the Markdown has the stages and the group tables" $?

# The trace's peak is the moment replay --json gives as lower_bound_time.
s=0
for f in "$src"/traces/*.json "$src"/traces/*.csv "$src"/traces/*.ops "$snap" "$tmp/gen/gen.heaptrack"; do
	[ -e "$f" ] || continue
	"$exe" replay "$f" -s greedy-size --json "$tmp/rp.json" >/dev/null 2>&1 || continue
	"$exe" explain "$f" --json "$tmp/ex.json" >/dev/null || { s=1; continue; }
	python3 - "$tmp/rp.json" "$tmp/ex.json" <<'EOF' || { echo "#   $f"; s=1; }
import json, sys
r = json.load(open(sys.argv[1]))["trace"]
e = json.load(open(sys.argv[2]))["traces"][0]
assert e["peak_time"] == r.get("lower_bound_time"), (e["peak_time"], r.get("lower_bound_time"))
assert e["peak_bytes"] == r["lower_bound"], (e["peak_bytes"], r["lower_bound"])
EOF
done
ok "explain's peak is replay's lower bound at its lower_bound_time on every bundled trace" $s

# The report draws the stages on its time axis (the renderer the viewer
# shares); the viewer shows them and groups its live list by them.
"$exe" replay "$snap" -s recorded --svg "$tmp/r.svg" >/dev/null
grep -q '>annotation stages<' "$tmp/r.svg" && grep -q 'backward.inner on cuda:0: steps 359' "$tmp/r.svg" &&
	grep -q '>forward<' "$tmp/r.svg"
ok "the report draws every stage as a labelled band with its steps" $?
python3 - "$snap" "$tmp/plain.pickle" <<'EOF'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
del s["external_annotations"]
pickle.dump(s, open(sys.argv[2], "wb"), protocol=4)
EOF
"$exe" replay "$tmp/plain.pickle" -s recorded --svg "$tmp/plain.svg" >/dev/null
! grep -q 'annotation stages' "$tmp/plain.svg"
ok "a snapshot without annotations draws no stage strip" $?
if [ -n "${AS_VIEWER:-}" ] && [ -n "${AS_PNG_PROBE:-}" ]; then
	shot() { # shot TRACE PNG [KEY...]
		local trace=$1 png=$2
		shift 2
		: >"$tmp/v.script"
		for k in "$@"; do echo "key $k" >>"$tmp/v.script"; done
		printf 'move 700 300\nwait 1\nscreenshot %s\n' "$png" >>"$tmp/v.script"
		SDL_VIDEODRIVER=dummy "$AS_VIEWER" "$trace" -s recorded --script "$tmp/v.script" >/dev/null 2>&1
	}
	shot "$snap" "$tmp/v1.png" && shot "$tmp/plain.pickle" "$tmp/v2.png" &&
		d=$("$AS_PNG_PROBE" diff "$tmp/v1.png" "$tmp/v2.png" 0 700 1279 799) &&
		[ "$d" -gt 500 ]
	ok "the viewer draws the stages under its panels" $?
	shot "$snap" "$tmp/v3.png" t && shot "$snap" "$tmp/v4.png" t g g g g &&
		d=$("$AS_PNG_PROBE" diff "$tmp/v3.png" "$tmp/v4.png" 0 0 1279 799) &&
		[ "$d" -gt 0 ]
	ok "the viewer's g reaches the grouping by annotation stage" $?
else
	skip "the viewer draws the stages under its panels" "the viewer is not built"
fi

# Grouped by annotation stage: the allocations made inside each stage.
"$exe" explain "$snap" --by annotation --json - >"$tmp/a.json"
python3 - "$tmp/a.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
keys = {g["key"] for s in d["traces"][0]["spaces"] for g in s["groups"]}
assert keys & {"forward", "backward", "backward.inner"}, keys
assert "(no stage)" in keys, keys
EOF
ok "--by annotation groups what is live by the stage it was allocated in" $?
"$exe" explain "$snap" --by context --top 3 | grep -q '\[0/1\]'
ok "--by context groups by compile context" $?

# Several files: the ranks table and the imbalance.
"$exe" explain "$snap" "$tmp/gen/gen.heaptrack" --json "$tmp/r.json" >"$tmp/r.txt"
s=$?
grep -q 'files: peak imbalance' "$tmp/r.txt" || s=1
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["ranks"]
p = [x["peak_bytes"] for x in r["peaks"]]
assert r["files"] == 2 and abs(r["imbalance"] - max(p) / (sum(p) / 2)) < 1e-6, r
' "$tmp/r.json" || s=1
ok "explain over several files ends with each peak, top group and the imbalance" $s

# A strategy's peak: an online allocator's fragmentation there.
"$exe" explain "$tmp/gen/gen.heaptrack" -s bfc -s greedy-size --json - >"$tmp/s.json"
python3 - "$tmp/s.json" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))["traces"][0]["strategies"]
assert [s["strategy"] for s in st] == ["bfc", "greedy-size"], st
f = st[0]["spaces"][0]["fragmentation"]
assert f and f["reserved"] >= f["live"] and f["largest_free"] <= f["free"] + f["live"], f
assert st[1]["spaces"][0]["fragmentation"] is None
assert st[0]["peak"] >= st[1]["peak"] > 0
EOF
ok "explain -s bfc gives the allocator's reserved, free and largest free block at its peak" $?

# Out of memory: a snapshot's `oom` entries, what the recording tells and
# what cuda-caching held then, against the pickle's own entry.
oom_check() { # PICKLE JSON
	python3 - "$1" "$2" <<'EOF'
import json, pickle, sys
snap = pickle.load(open(sys.argv[1], "rb"))
tr = json.load(open(sys.argv[2]))["traces"][0]
entries = [(f"cuda:{d}", e) for d, t in enumerate(snap["device_traces"])
           for e in t if e.get("action") == "oom"]
rec, mod = tr["ooms"], tr["strategies"][0]["ooms"]
assert len(rec) == len(entries) > 0 and len(mod) >= 1, (rec, mod)
for o, (space, e) in zip(rec, entries):
    assert o["space"] == space and o["recorded"] and not o["modelled"], o
    assert o["request"] == e["size"] and o["device_free"] == e["device_free"], o
    assert o["device_total"] == o["reserved"] + o["device_free"], o
    lives = o["live"] + o["request"] > o["device_total"]
    assert o["verdict"] == ("live memory" if lives else "fragmentation"), o
    assert o["cached_by_class"] is None and o["largest_free"] is None, o
for m in mod:
    assert m["modelled"] and m["recorded"], m  # reproducing: the recording's
    r = [o for o in rec if (o["space"], o["time"]) == (m["space"], m["time"])]
    assert len(r) == 1 and m["request"] == r[0]["request"], (m, rec)
    # the model holds the recording's live bytes (its blocks rounded up to
    # 512 bytes) and reads its device size
    assert 0 <= m["live"] - r[0]["live"] <= m["live"] // 1000, (m, r)
    assert m["device_total"] == r[0]["device_total"], (m, r)
    assert m["cached_free"] == sum(m["cached_by_class"].values()), m
    assert m["cached_free"] == m["reserved"] - m["live"], m
    assert 0 < m["largest_free"] <= m["cached_free"], m
    lives = m["live"] + m["device_request"] > m["device_total"]
    assert m["verdict"] == ("live memory" if lives else "fragmentation"), m
EOF
}
python3 "$src/tests/gen_snapshots.py" "$tmp/snaps" &&
	"$exe" explain "$tmp/snaps/three_devices.pickle" -s cuda-caching --json - >"$tmp/oom.json" &&
	oom_check "$tmp/snaps/three_devices.pickle" "$tmp/oom.json"
ok "explain -s cuda-caching gives a generated snapshot's OOM: the request and free memory as recorded, live, reserved, cached by class, largest free block, verdict" $?
"$exe" explain "$tmp/snaps/three_devices.pickle" >"$tmp/oom.txt" &&
	grep -q "^out of memory (recorded): cuda:2: step [0-9]*: request 80.0 GiB (85899345920 bytes)" "$tmp/oom.txt" &&
	grep -q "device free 123 MiB" "$tmp/oom.txt" &&
	grep -q "failed for live memory" "$tmp/oom.txt" &&
	grep -q "explain -s cuda-caching" "$tmp/oom.txt"
ok "explain of a snapshot with an OOM says what the recording tells and where the allocator's state is" $?
"$exe" explain "$tmp/snaps/three_devices.pickle" -s cuda-caching --markdown "$tmp/oom.md" >/dev/null &&
	grep -q "^#### Out of memory · cuda-caching" "$tmp/oom.md" &&
	grep -q "^| cuda:2 | [0-9]* | 80.0 GiB |" "$tmp/oom.md"
ok "explain --markdown has a table of the OOMs, recorded and modelled" $?
gnn=$shared/snapshots/diverging/expandable_gnn.pickle
if [ -n "$shared" ] && [ -e "$gnn" ]; then
	"$exe" explain "$gnn" -s cuda-caching --json - >"$tmp/gnn.json" &&
		oom_check "$gnn" "$tmp/gnn.json"
	ok "explain -s cuda-caching gives the OOM of a real snapshot (diverging/expandable_gnn) as recorded and as modelled" $?
else
	skip "explain -s cuda-caching gives the OOM of a real snapshot" "../shared/snapshots/diverging/expandable_gnn.pickle is absent"
fi

# diff --by: against itself nothing changes; a grown call site comes first.
"$exe" diff --by stack "$snap" "$snap" >"$tmp/d.txt"
s=$?
[ $s -eq 0 ] && grep -q 'OK: no regression' "$tmp/d.txt" && ! grep -q '^REGRESSED\|^better\|^worse' "$tmp/d.txt"
ok "diff --by stack of a recording against itself reports nothing changed (exit 0)" $?
ht=$tmp/gen/gen.heaptrack
sed 's/^a 300 5$/a 900 5/' "$ht" >"$tmp/grown.heaptrack"
"$exe" diff --by stack "$ht" "$tmp/grown.heaptrack" --max-regress 5 \
	--markdown "$tmp/d.md" >"$tmp/d2.txt"
s=$?
first=$(grep -m1 -A0 '^REGRESSED' "$tmp/d2.txt")
[ $s -eq 1 ] && echo "$first" | grep -q 'work prog.c:20' || {
	echo "#   exit $s, first row: $first"
	s=9
}
grep -q 'regression' "$tmp/d.md" || s=9
[ $s -ne 9 ]
ok "diff --by stack names the call site that allocates more first (exit 1 with --max-regress)" $?
python3 - "$snap" "$tmp/grown.pickle" <<'EOF'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
for d in s["device_traces"]:
    for e in d:
        if any(f.get("name") == "layer3" for f in e.get("frames", [])):
            e["size"] *= 3
pickle.dump(s, open(sys.argv[2], "wb"), protocol=4)
EOF
"$exe" diff --by stack "$snap" "$tmp/grown.pickle" --max-regress 5 >"$tmp/d3.txt"
s=$?
[ $s -eq 1 ] && grep -A1 -m1 '^REGRESSED' "$tmp/d3.txt" | grep -q 'layer3' &&
	[ "$(grep -c '^REGRESSED' "$tmp/d3.txt")" -eq 2 ]
ok "diff --by stack of two snapshots names the grown call site on each device first" $?
"$exe" diff --by stack "$ht" "$tmp/grown.heaptrack" --max-regress 100000 >/dev/null
ok "diff --by stack passes when the growth is within --max-regress" $?

# Your code's frames: on a torch.compile'd model, the kernels that share
# a model line are one row (each kernel line its own row by stack).
f=${shared:+$shared/snapshots/fidelity/cs336_2.7b_forward.pickle}
if [ -n "$f" ] && [ -e "$f" ]; then
	"$exe" explain "$f" --by frame --top 0 --json "$tmp/fr.json" >/dev/null &&
		"$exe" explain "$f" --by stack --top 0 --json "$tmp/st.json" >/dev/null &&
		python3 - "$tmp/fr.json" "$tmp/st.json" <<'EOF'
import json, sys
fr = json.load(open(sys.argv[1]))["traces"][0]["spaces"][0]
st = json.load(open(sys.argv[2]))["traces"][0]["spaces"][0]
row = next(g for g in fr["groups"] if g["key"].endswith("transformer.py:22:forward"))
line = row["key"]
# The stacks of a generated kernel line called from that model line.
stacks = [g for g in st["groups"]
          if "torchinductor_" in g["key"].split("\n")[0]
          and g["key"].split("\n")[1:2] == [line]]
kernels = {g["key"].split("\n")[0] for g in stacks}
assert len(kernels) >= 10, len(kernels)
assert row["bytes"] >= sum(g["bytes"] for g in stacks), row["bytes"]
assert row["above"] and "torchinductor_" in row["above"][-1], row["above"]
assert fr["groups_total"] * 10 < st["groups_total"], (fr["groups_total"], st["groups_total"])
for g in fr["groups"][:10]:
    assert "torchinductor_" not in g["key"] and "site-packages" not in g["key"], g["key"]
print(f"#   {line}: {len(kernels)} kernel lines in one row; "
      f"{fr['groups_total']} rows by frame, {st['groups_total']} by stack")
EOF
	ok "--by frame merges the generated kernels of cs336_2.7b_forward that share a model line into one row" $?
else
	skip "--by frame merges the generated kernels that share a model line" "../shared/snapshots/fidelity is absent"
fi
agrees "$snap" 'late=layer[67]'
ok "--by category with --rule agrees with the reference's rules (first match wins)" $?
"$exe" explain "$snap" --by category --top 0 >"$tmp/cat.txt" &&
	grep -q 'allocated before the recording' "$tmp/cat.txt" &&
	grep -q 'a torch.optim frame' "$tmp/cat.txt" &&
	grep -q 'a constructor, init or .to() frame' "$tmp/cat.txt"
ok "--by category shows each category's evidence" $?
"$exe" explain "$snap" --by line model.py --json - | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["version"] == 2 and d["by"] == "line" and d["line_file"] == "model.py"
for s in d["traces"][0]["spaces"]:
    keys = [g["key"] for g in s["groups"]]
    assert all(k.startswith("model.py:") or k.startswith("(no frame") for k in keys), keys
    assert sum(g["bytes"] for g in s["groups"]) + s["other_bytes"] == s["peak_bytes"]
'
ok "--by line FILE groups the peak by the lines of that file, summing to the peak" $?
"$exe" explain "$src/traces/cnn-recorded.csv" --by annotation >"$tmp/na.txt"
[ "$(grep -c 'nothing to group by: this trace has no annotation stages' "$tmp/na.txt")" -eq 1 ] &&
	! grep -q 'top frames' "$tmp/na.txt"
ok "a grouping with nothing to group by says so in one line instead of one group" $?
"$exe" explain "$snap" --by prefix | grep -q 'nothing to group by: its buffer names are addresses'
ok "--by prefix on address names says it has nothing to group by" $?
"$exe" explain "$snap" | grep -q '(no frames: allocated before the recording)'
ok "blocks without frames are named for why (allocated before the recording)" $?
"$exe" diff --by category "$snap" "$tmp/grown.pickle" --max-regress 5 >"$tmp/dc.txt"
[ $? -eq 1 ] && grep -q '^REGRESSED' "$tmp/dc.txt"
ok "diff --by category fails when a category grew (exit 1)" $?
"$exe" diff --by line model.py "$snap" "$tmp/grown.pickle" --max-regress 5 >"$tmp/dl.txt"
[ $? -eq 1 ] && grep -A1 -m1 '^REGRESSED' "$tmp/dl.txt" | grep -q 'layer3'
ok "diff --by line names the grown line first (exit 1)" $?
"$exe" diff --by frame "$snap" "$snap" >/dev/null
ok "diff --by frame of a recording against itself passes" $?

# Usage and input errors: exit status 2 with a message.
"$exe" explain "$snap" --user-code '([' 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "not a regular expression" "$tmp/err"
ok "explain --user-code with a bad regular expression is a usage error" $?
"$exe" explain "$snap" --rule nothing 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "NAME=REGEX" "$tmp/err"
ok "explain --rule without NAME=REGEX is a usage error" $?

"$exe" explain 2>/dev/null
[ $? -eq 2 ]
ok "explain without a trace is a usage error" $?
"$exe" explain "$snap" --by nonsense 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "nonsense" "$tmp/err"
ok "explain --by with an unknown grouping is a usage error naming it" $?
"$exe" explain "$tmp/missing.pickle" 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "missing.pickle" "$tmp/err"
ok "explain of a missing file says which" $?
"$exe" diff --by stack "$snap" 2>/dev/null
[ $? -eq 2 ]
ok "diff --by with one trace is a usage error" $?

echo "1..$n"
[ $failed -eq 0 ]
