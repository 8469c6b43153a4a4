#!/bin/sh
# The certified lower bound of strip on the shared benchmarks and
# the generated tile traces: per trace the load, the certified bound, the
# plan, their gaps and the sub-problem that proves the bound.
#
#   tests/bench/cert_bench.sh [BUILD_DIR] [SPEC]
#
# BUILD_DIR defaults to build, SPEC to "strip". Prints a markdown table and
# the load average it started under. Needs ../shared and python3.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
spec=${2:-strip}
exe="$here/$build/allocscope"
shared="$here/../shared/benchmarks"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

row() {
	"$exe" replay "$1" -s "$spec" --json "$tmp/out.json" >/dev/null
	python3 - "$tmp/out.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
c = r["certificates"][0]
lb, cb, peak = c["lower_bound"], c["certified_bound"], r["peak"]
cert = c["certificate"]
sub = "%d buffers, %d nodes" % (len(cert["buffers"]), cert["nodes"]) \
    if cert else "- (the load)"
verdict = "optimal" if peak <= cb else "<= %.3f%%" % (100.0 * (peak - cb) / cb)
print("| %s | %d | %d | %d | %d | %.3f%% | %s | %s | %d | %.2f |" % (
    sys.argv[2], d["trace"]["buffers"], lb, cb, peak,
    100.0 * (peak - lb) / lb, verdict, sub, r["stats"].get("bound_nodes", 0),
    r["plan_ms"] / 1000.0))
PY
}

echo "## strip's certified bound ($spec; $(uptime | sed 's/.*load/load/'))"
echo
echo "| trace | buffers | load | certified | plan | plan vs load | plan vs certified | certificate | bound nodes | s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for f in "$shared"/minimalloc/[A-K].1048576.csv; do
	row "$f" "MiniMalloc $(basename "$f" .1048576.csv)"
done
row "$shared/idealloc/G_1.csv" "idealloc G_1"
row "$shared/idealloc/resnet50.csv" "idealloc resnet50"
gen="$here/tests/bench/strip_gen.py"
for n in 5210 10420 20400 52100; do
	src=$shared/idealloc/resnet50.csv
	[ "$n" = 20400 ] && src=$shared/idealloc/G_1.csv
	python3 "$gen" tile "$n" "$src" >"$tmp/tile.csv"
	row "$tmp/tile.csv" "tile $n ($(basename "$src" .csv))"
done
