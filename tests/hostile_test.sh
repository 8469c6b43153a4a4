#!/bin/sh
# Small files that once cost minutes or gigabytes, TAP: every
# case tests/hostile_gen.py writes goes through `replay` (the default set),
# and is refused (exit status 2) or loads (0) as its manifest says, within
# 10 s and 1 GB; a case with a control (a hash flood and its random
# addresses, 350,000 deep stacks and the same allocations with one frame)
# may instead take up to 5 times its control's time and memory. The
# figures go to the TAP output. Needs AS_EXE, AS_SOURCE_DIR, python3;
# /usr/bin/time for the memory (without it only time is checked).
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
MAX_S=10
MAX_KB=1048576
if [ -n "${AS_SANITIZED:-}" ]; then
	echo "1..0 # SKIP its time and memory bounds are measured without sanitizers (built with $AS_SANITIZED)"
	exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no python3 to write the cases"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cases"
if ! python3 "$src/tests/hostile_gen.py" "$tmp/cases" 2>"$tmp/gen.err"; then
	echo "1..1"
	echo "not ok 1 - hostile_gen.py writes the cases"
	sed 's/^/#   /' "$tmp/gen.err"
	exit 0
fi
sed 's/^/# /' "$tmp/gen.err"
timer=
[ -x /usr/bin/time ] && timer=/usr/bin/time

# run FILE: "SECONDS KB RC" of replay on it (KB 0 without /usr/bin/time)
run() {
	rm -f "$tmp/out.json"
	if [ -n "$timer" ]; then
		(ulimit -v 4194304 2>/dev/null
		 $timer -f '%e %M' -o "$tmp/time" timeout 120 "$exe" replay \
			--no-progress -j 2 "$tmp/cases/$1" --json "$tmp/out.json" \
			>/dev/null 2>"$tmp/err")
		rc=$?
		set -- $(tail -n 1 "$tmp/time")
		echo "$1 $2 $rc"
	else
		t0=$(date +%s.%N)
		(ulimit -v 4194304 2>/dev/null
		 timeout 120 "$exe" replay --no-progress -j 2 "$tmp/cases/$1" \
			--json "$tmp/out.json" >/dev/null 2>"$tmp/err")
		rc=$?
		t1=$(date +%s.%N)
		echo "$(awk "BEGIN { print $t1 - $t0 }") 0 $rc"
	fi
}

total=$(grep -c . "$tmp/cases/MANIFEST")
echo "1..$total"
n=0
while read -r f kind control; do
	[ -n "$f" ] || continue
	n=$((n + 1))
	set -- $(run "$f")
	s=$1 kb=$2 rc=$3
	echo "$s $kb" >"$tmp/fig.$f"
	msg=$(head -n 1 "$tmp/err" | cut -c1-200)
	lim_s=$MAX_S lim_kb=$MAX_KB
	if [ "$control" != "-" ] && [ -f "$tmp/fig.$control" ]; then
		read -r cs ckb <"$tmp/fig.$control"
		lim_s=$(awk "BEGIN { x = 5 * $cs; print (x > $MAX_S ? x : $MAX_S) }")
		lim_kb=$(awk "BEGIN { x = 5 * $ckb; print (x > $MAX_KB ? x : $MAX_KB) }")
	fi
	case $kind in
	control) want="rc = 0, a control" lim_s=1e9 lim_kb=1e12
		 ok_rc=$([ "$rc" -eq 0 ] && echo 1) ;;
	refused) want="rc = 2" ok_rc=$([ "$rc" -eq 2 ] && echo 1) ;;
	loads) want="rc = 0" ok_rc=$([ "$rc" -eq 0 ] && echo 1) ;;
	*) want="rc 0 or 2"
	   ok_rc=$({ [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; } && echo 1) ;;
	esac
	ok_t=$(awk "BEGIN { print ($s <= $lim_s) }")
	ok_m=$(awk "BEGIN { print ($kb <= $lim_kb) }")
	what="$f: $s s, $kb KB, exit $rc (want $want, <= $lim_s s, <= $lim_kb KB)"
	# every error has text: "FILE: reason", never "FILE: "
	ok_msg=1
	if [ "$rc" -ne 0 ]; then
		case $msg in
		"" | *": ") ok_msg= ;;
		esac
	fi
	if [ "$ok_rc" = 1 ] && [ "$ok_t" = 1 ] && [ "$ok_m" = 1 ] &&
	   [ "$ok_msg" = 1 ]; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
	fi
	[ -n "$msg" ] && echo "#   $msg"
done <"$tmp/cases/MANIFEST"
