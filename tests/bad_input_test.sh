#!/bin/sh
# The bad-input corpus (tests/bad/): every file is refused with exit status
# 2, its first error line exactly as FILE.expected says (FILE:LINE: message)
# and no output file. Traces go through `replay --json`, results-*.json
# through `diff`, plans/plan-*.csv through `check plans/trace.csv --plan`.
# Inputs too large to commit are generated here (gen_*), checked the same way.
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
out=$tmp/out
mkdir "$out"
check() { # check FILE COMMAND...
	f=$1
	shift
	"$@" >/dev/null 2>"$tmp/err"
	rc=$?
	got=$(head -n 1 "$tmp/err")
	want=$(cat "$f.expected")
	n=$((n + 1))
	if [ $rc -eq 2 ] && [ "$got" = "$want" ] && [ -z "$(ls "$out")" ]; then
		echo "ok $n - $f is refused with its line and reason"
	else
		echo "not ok $n - $f is refused with its line and reason"
		echo "#   rc=$rc got '$got' want '$want'"
		rm -rf "$out"/*
	fi
}
cd "$src/tests/bad" || exit 1
total=$(ls | grep -v -e '\.expected$' -e '^plans$' | wc -l)
total=$((total + $(ls plans | grep -c '^plan-.*\.csv$')))
ngen=1
echo "1..$((total + ngen + 1))"
for f in *; do
	case $f in
	*.expected | plans) ;;
	results-*) check "$f" "$exe" diff "$f" "$f" --markdown "$out/r.md" ;;
	*) check "$f" "$exe" replay --no-progress "$f" --json "$out/r.json" ;;
	esac
done
cd plans
for f in plan-*.csv; do
	check "$f" "$exe" check trace.csv --plan "$f"
done

# 10^6 profiler events on one line, the last an allocation at a live
# address: refused on line 1, naming the element, in seconds.
gen=$tmp/gen
mkdir "$gen"
f=$gen/profiler-1e6-one-line.json
awk 'BEGIN {
	printf "{\"traceEvents\": ["
	for (i = 0; i < 1000000; i++)
		printf "%s{\"ph\": \"i\", \"name\": \"[memory]\", \"ts\": %d, " \
		       "\"args\": {\"Addr\": 4096, \"Bytes\": %d, " \
		       "\"Device Type\": 0, \"Device Id\": -1}}", \
		       i ? ", " : "", i, i % 2 && i < 999999 ? -64 : 64
	print "]}"
}' >"$f"
echo "$f:1: traceEvents[999999].args.Addr: 0x1000 on cpu is allocated again" \
	"without a free (allocated with 64 bytes on line 1)" >"$f.expected"
check "$f" "$exe" replay --no-progress "$f" --json "$out/r.json"
rm -f "$f"

n=$((n + 1))
if [ "$total" -ge 60 ]; then
	echo "ok $n - the corpus holds at least 60 bad inputs ($total)"
else
	echo "not ok $n - the corpus holds at least 60 bad inputs ($total)"
fi
