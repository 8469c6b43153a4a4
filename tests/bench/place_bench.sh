#!/bin/sh
# Benchmark of the offline planners at real-trace scale.
#
#   tests/bench/place_bench.sh [BUILD_DIR]
#
# Generates the traces with tests/bench/place_gen.py (deterministic) and
# prints one markdown table: per trace and planner the peak against the
# lower bound, the planning time, its ratio to the segment-tree greedy of the
# same order and fit (tests/bench/place_ref.c, built as BUILD_DIR/tests/
# place_ref, run on the same CSV just before; bestfit runs two orders, so
# against the sum of both), the wall time and peak memory of the whole
# `allocscope replay` run, and the ratio of that wall time to `sort -n` of
# the same CSV measured in the same run. Sizes from the environment:
#   MALLOC="N:LIVE ..."   malloc-like traces (default "180000:20000 1100000:4000")
#   COMPILER="N:MODEL ..." compiler-like traces from ../shared idealloc models
#                         (default "18000:resnet50 62000:G_1"; skipped when
#                         ../shared is absent)
#   RANDOM_N="N ..."      random lifetimes of 1-5000 steps (default "1000000";
#                         the target is 10000000)
#   RECORDED="perl perlhash python" real malloc traces recorded here:
#                         glibc's mtrace of unmodified perl (hash churn,
#                         922k blocks, 9k live; perlhash: a 20,000-key hash
#                         rewritten, 91k blocks, 20k live) and python3
#                         (JSON churn, 1.3M blocks, 116k live) (tests/bench/
#                         mtrace_shim.c preloaded with libc_malloc_debug);
#                         allocscope reads the .mtrace (16-byte alignment),
#                         the reference and sort the same buffers as CSV with
#                         sizes rounded up to 16 (the same problem); an
#                         extra row times the default `replay` (every
#                         strategy). RECORDED="" skips them. Two more,
#                         not in the default list (minutes each): pyjson
#                         (the same churn, 30 rounds of 600: 1.18M blocks,
#                         61k live) and pyast (ast.parse of 60 stdlib
#                         modules, every tenth tree kept: 1.6M blocks,
#                         175k live).
#   SPECS="..."           planners (default: greedy-size bestfit
#                         greedy-breadth strip)
# Every plan is validated by allocscope; a row says "INVALID" otherwise.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
exe="$here/$build/allocscope"
ref="$here/$build/tests/place_ref"
gen="$here/tests/bench/place_gen.py"
models="$here/../shared/benchmarks/idealloc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
[ -x "$exe" ] && [ -x "$ref" ] ||
	{ echo "no $exe or $ref: build first (ninja -C $build)" >&2; exit 2; }

specs=${SPECS:-"greedy-size bestfit greedy-breadth strip"}

# seconds of `sort -n` of a file (wall clock), for the ratios
sort_s() {
	/usr/bin/time -f %e -o "$tmp/sort.t" sort -n "$1" >/dev/null
	cat "$tmp/sort.t"
}

# seconds of the reference's placement, order $2, fit $3
ref_s() {
	"$ref" "$1" "$2" "$3" | awk '{print $2}'
}

row() { # file label [trace allocscope reads instead of file]
	f=$1 label=$2 in=${3:-$1}
	st=$(sort_s "$f")
	n=$(($(wc -l <"$f") - 1))
	for s in $specs; do
		case $s in
		greedy-size) rs=$(ref_s "$f" size lowest) ;;
		greedy-breadth) rs=$(ref_s "$f" breadth best) ;;
		bestfit) rs=$(echo "$(ref_s "$f" size best) $(ref_s "$f" length best)" |
			awk '{print $1 + $2}') ;;
		*) rs= ;;
		esac
		/usr/bin/time -f "%e %M" -o "$tmp/t" "$exe" replay "$in" -s "$s" \
			--no-progress --json "$tmp/out.json" >/dev/null 2>&1 || true
		python3 - "$tmp/out.json" "$tmp/t" "$label" "$s" "$st" "$n" "$rs" <<'PY'
import json, sys
out, tfile, label, spec, st, n, rs = sys.argv[1:]
wall, kb = open(tfile).read().split()
try:
    d = json.load(open(out))
    r = d["results"][0]
    lb = d["trace"]["lower_bound"]
    ok = "" if r["valid"] else " INVALID"
    plan = r["plan_ms"] / 1000.0
    vs = "%.2f (%.2fx)" % (float(rs), plan / max(float(rs), 0.001)) if rs else ""
    print("| %s | %s | %s | +%.3f%%%s | %.2f | %s | %.2f | %.1fx | %.0f |" % (
        label, n, spec, 100.0 * (r["peak"] - lb) / lb, ok, plan, vs,
        float(wall), float(wall) / max(float(st), 0.01),
        int(kb) * 1024.0 / int(n)))
except Exception as e:
    print("| %s | %s | %s | failed (%s) | | | %s | | |" % (label, n, spec, e, wall))
PY
	done
	echo "| $label | $n | sort -n | | | | $st | 1.0x | |"
}

# python3's JSON churn: ROUNDS rounds of RECORDS records, dumped and loaded.
churn='import json, random, sys
random.seed(2)
for r in range(int(sys.argv[1])):
    d = [{"a": random.random(), "b": [str(i) for i in range(random.randint(1, 20))]} for _ in range(int(sys.argv[2]))]
    e = json.loads(json.dumps(d))'

record() { # name out.mtrace: an unmodified program's malloc trace
	case $1 in
	perl) set -- "$2" perl -e 'my %h; for my $i (1..300000) {
		$h{$i % 4000} = "x" x ($i % 300);
		my $s = join(",", map { $_ * 2 } (1..($i % 7))); }' ;;
	perlhash) set -- "$2" perl -e 'my %h; for my $i (1..90000) {
		$h{$i % 20000} = "x" x ($i % 300); }' ;;
	python) set -- "$2" python3 -c "$churn" 10 2000 ;;
	pyjson) set -- "$2" python3 -c "$churn" 30 600 ;;
	pyast) set -- "$2" python3 -c 'import ast, glob, sys
lib = "%s/lib/python%d.%d" % (sys.base_prefix, *sys.version_info[:2])
keep = []
for i, f in enumerate(sorted(glob.glob(lib + "/*.py"))[:60]):
    t = ast.parse(open(f).read())
    if i % 10 == 0:
        keep.append(t)' ;;
	*) echo "unknown program $1" >&2; return 1 ;;
	esac
	out=$1
	shift
	# fixed hash seeds: the same trace every run
	PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 PYTHONHASHSEED=0 \
	MALLOC_TRACE=$out PYTHONMALLOC=malloc LD_PRELOAD="$debug $tmp/shim.so" \
		"$@" >/dev/null
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| trace | buffers | planner | vs lower bound | plan s | reference s (plan / ref) | replay wall s | / sort -n | bytes/buffer |"
echo "|---|---|---|---|---|---|---|---|---|"
for m in ${MALLOC-"180000:20000 1100000:4000"}; do
	python3 "$gen" malloc "${m%%:*}" "${m##*:}" >"$tmp/m.csv"
	row "$tmp/m.csv" "malloc ${m%%:*}, ${m##*:} live"
done
if [ -d "$models" ]; then
	for c in ${COMPILER-"18000:resnet50 62000:G_1"}; do
		python3 "$gen" compiler "${c%%:*}" "$models/${c##*:}.csv" >"$tmp/c.csv"
		row "$tmp/c.csv" "compiler ${c##*:} ${c%%:*}"
	done
else
	echo "(compiler-like traces skipped: $models is absent)" >&2
fi
debug=/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0
if [ -n "${RECORDED-perl perlhash python}" ] && [ -e "$debug" ] &&
	cc -shared -fPIC -o "$tmp/shim.so" "$here/tests/bench/mtrace_shim.c"; then
	for p in ${RECORDED-perl perlhash python}; do
		record "$p" "$tmp/r.mtrace"
		"$exe" replay "$tmp/r.mtrace" -s recorded --no-progress \
			--plan-out "$tmp/p.csv" >/dev/null
		awk -F, 'NR == 1 { print "id,lower,upper,size"; next }
			{ print NR - 2 "," $2 "," $3 "," int(($4 + 15) / 16) * 16 }' \
			"$tmp/p.csv" >"$tmp/r.csv"
		row "$tmp/r.csv" "$p mtrace" "$tmp/r.mtrace"
		/usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$exe" replay \
			"$tmp/r.mtrace" --no-progress >/dev/null
		read -r wall user sys kb <"$tmp/t"
		echo "| $p mtrace | | default replay (every strategy) | | | | $wall (CPU $(echo "$user $sys" | awk '{print $1 + $2}')) | | |"
	done
else
	echo "(recorded traces skipped: no $debug or no cc)" >&2
fi
for r in ${RANDOM_N-1000000}; do
	python3 "$gen" random "$r" >"$tmp/r.csv"
	row "$tmp/r.csv" "random $r"
done
