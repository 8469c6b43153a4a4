#!/bin/sh
# strip's budget on real recordings: for each TRACE, the time to read it
# (`allocscope check`, which reads, bounds and validates the recorded
# placement), `-s greedy-size`, and `-s strip` at the default budget and at
# budget_ms=1000, one after the other in the same run. Prints a markdown
# row per run: wall and user seconds, peak, its gap to the load and to
# greedy-size's peak, plan_ms and strip's rounds.
#
#   tests/bench/strip_budget.sh [BUILD_DIR] TRACE...
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
shift
exe="$here/$build/allocscope"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| trace | run | wall s | user s | peak | vs load | vs greedy-size | plan ms | rounds |"
echo "|---|---|---|---|---|---|---|---|---|"
for f in "$@"; do
	name=$(basename "$f")
	/usr/bin/time -f '%e %U' -o "$tmp/time" "$exe" check "$f" >/dev/null 2>&1 || true
	read -r w u <"$tmp/time"
	echo "| $name | check (read) | $w | $u | | | | | |"
	gs=""
	for spec in greedy-size strip strip:budget_ms=1000; do
		/usr/bin/time -f '%e %U' -o "$tmp/time" "$exe" replay "$f" -s "$spec" \
			--no-progress --json "$tmp/out.json" >/dev/null 2>&1
		read -r w u <"$tmp/time"
		gs=$(python3 - "$tmp/out.json" "$name" "$spec" "$w" "$u" "$gs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
name, spec, w, u, gs = sys.argv[2:7]
r = d["results"][0]
lb = d["trace"]["lower_bound"]
peak = r["peak"]
gs = int(gs) if gs else peak
rounds = "; ".join(x["label"] for x in r.get("rounds", []))
print("| %s | %s | %s | %s | %d | %+.3f%% | %+d B | %.0f | %s |" % (
    name, spec, w, u, peak, 100.0 * (peak / lb - 1), peak - gs,
    r["plan_ms"], rounds), file=sys.stderr)
print(gs)
PY
		)
	done
done 2>&1
