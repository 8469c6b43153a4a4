#!/usr/bin/env bash
# Malloc traces and compressed input end to end (TAP): the bad corpus of
# these formats, real programs recorded here with glibc mtrace (through
# tests/mtrace/mtrace_shim.c) and heaptrack, checked against independent
# counts (tests/mtrace/mtrace_count.py; heaptrack_print), and the same
# recordings compressed. Needs AS_EXE, AS_SOURCE_DIR and AS_MTRACE_SHIM.
set -u
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
shim=${AS_MTRACE_SHIM:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"

# A field of the replay JSON (sed, not a python per field: this test runs
# often on busy machines): json FILE buffers|lower_bound, or
# json FILE STRATEGY peak|valid.
json() {
	if [ $# -eq 2 ]; then
		sed -n "1s/.*\"events\": [0-9]*, \"buffers\": \([0-9]*\), \"lower_bound\": \([0-9]*\).*/\\1 \\2/p" "$1" |
			if [ "$2" = buffers ]; then cut -d' ' -f1; else cut -d' ' -f2; fi
	else
		grep "\"strategy\": \"$2\"" "$1" | sed -n "s/.*\"$3\": \([a-z0-9]*\).*/\\1/p"
	fi
}

# Bad inputs: exit status 2, the exact "file:line: message", no output.
cd "$src/tests/bad"
for f in *.mtrace *.heaptrack *.gz *.zst; do
	[ -e "$f" ] || continue
	out=$("$exe" replay "$f" --json "$tmp/out.json" 2>&1 >/dev/null)
	rc=$?
	want=$(cat "$f.expected")
	[ $rc -eq 2 ] && [ "$out" = "$want" ] && [ ! -e "$tmp/out.json" ]
	s=$?
	[ $s -eq 0 ] || echo "#   $f: rc=$rc got '$out' want '$want'"
	ok "bad input $f is refused with its line and reason" $s
done
cd "$src"

# A hostile zstd file (100 MB of one line) is refused in bounded memory.
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f %M -o "$tmp/rss" "$exe" replay \
		tests/bad/line-bomb.mtrace.zst >/dev/null 2>&1
	rss=$(tail -1 "$tmp/rss")
	[ "$rss" -lt 400000 ]
	ok "a decompression bomb is refused within 400 MB (took ${rss} KB)" $?
else
	skip "a decompression bomb is refused within 400 MB" "no /usr/bin/time"
fi

# Every format reads the same compressed, by extension or by magic alone.
snap=${AS_SHARED_DIR:-}/snapshots/eor_nn.pickle
[ -e "$snap" ] || snap=""
for f in traces/small-cnn.json traces/cnn-recorded.csv $(ls traces/*.ops 2>/dev/null | head -1) $snap; do
	[ -e "$f" ] || continue
	b=$(basename "$f")
	"$exe" replay "$f" -s greedy-size --json "$tmp/p.json" >/dev/null 2>&1
	want="$(json "$tmp/p.json" buffers) $(json "$tmp/p.json" lower_bound)"
	gzip -c "$f" >"$tmp/$b.gz"
	gzip -c "$f" >"$tmp/$b-gz-noext"
	s=0
	for c in "$tmp/$b.gz" "$tmp/$b-gz-noext"; do
		"$exe" replay "$c" -s greedy-size --json "$tmp/c.json" >/dev/null 2>&1 &&
			[ "$(json "$tmp/c.json" buffers) $(json "$tmp/c.json" lower_bound)" = "$want" ] || s=1
	done
	if command -v zstd >/dev/null; then
		zstd -q -c "$f" >"$tmp/$b.zst"
		"$exe" replay "$tmp/$b.zst" -s greedy-size --json "$tmp/c.json" >/dev/null 2>&1 &&
			[ "$(json "$tmp/c.json" buffers) $(json "$tmp/c.json" lower_bound)" = "$want" ] || s=1
	fi
	ok "$b reads the same gzip'ed, zstd'ed and without an extension" $s
done

# The reader's counts reach the table.
printf '= Start\n- 0x5000\n+ 0x1000 0x10\n+ (nil) 0x7fffffffffff\n' >"$tmp/s.mtrace"
"$exe" replay "$tmp/s.mtrace" -s greedy-size >"$tmp/out" 2>&1 &&
	grep -q "^input: 1 frees of addresses never allocated; 1 failed allocations; 1 blocks live at the end" "$tmp/out"
ok "replay prints what the mtrace reader counted and set aside" $?

# Programs to record: whatever is installed.
programs=()
py=$(command -v /usr/bin/python3 || command -v python3 || true)
[ -n "$py" ] && programs+=("python:$py -c import json; print(len(json.dumps([str(i) for i in range(5000)])))")
command -v git >/dev/null && programs+=("git:git --version")
command -v sqlite3 >/dev/null && programs+=("sqlite3:sqlite3 :memory: create table t(x); insert into t values (1),(2); select sum(x) from t;")
command -v gcc >/dev/null && programs+=("gcc:gcc --version")

# Record with mtrace: preload glibc's malloc debug library when it exists
# (glibc >= 2.34 keeps the hooks there), then the shim.
preload="$shim"
for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /lib /usr/lib; do
	if [ -e "$d/libc_malloc_debug.so.0" ]; then
		preload="$d/libc_malloc_debug.so.0 $shim"
		break
	fi
done

run_program() { # run_program SPEC: "NAME:CMD ARGS" (sqlite3 takes SQL as one)
	local cmd=${1#*:}
	case "$1" in
	python:*) "${cmd%% -c *}" -c "${cmd#* -c }" ;;
	sqlite3:*) sqlite3 :memory: "${cmd#sqlite3 :memory: }" ;;
	*) $cmd ;;
	esac
}

for spec in "${programs[@]}"; do
	name=${spec%%:*}
	if [ -z "$shim" ] || [ ! -e "$shim" ]; then
		skip "mtrace of $name replays with the independent count" "no shim built"
		continue
	fi
	rm -f "$tmp"/m.*
	MALLOC_TRACE="$tmp/m.%p" LD_PRELOAD="$preload" run_program "$spec" >/dev/null 2>&1
	# The biggest file is the program's (a shell wrapper may add one).
	f=$(ls -S "$tmp"/m.* 2>/dev/null | head -1)
	if [ -z "$f" ] || [ ! -s "$f" ]; then
		skip "mtrace of $name replays with the independent count" "no trace written (mtrace unavailable)"
		continue
	fi
	mv "$f" "$tmp/$name.mtrace"
	f=$tmp/$name.mtrace
	read -r blocks peak < <(python3 "$src/tests/mtrace/mtrace_count.py" "$f")
	"$exe" replay "$f" -s recorded -s greedy-size --json "$tmp/r.json" >/dev/null 2>"$tmp/err"
	rc=$?
	got_b=$(json "$tmp/r.json" buffers 2>/dev/null)
	got_lb=$(json "$tmp/r.json" lower_bound 2>/dev/null)
	valid=$(json "$tmp/r.json" recorded valid 2>/dev/null)
	rpeak=$(json "$tmp/r.json" recorded peak 2>/dev/null)
	[ $rc -eq 0 ] && [ "$got_b" = "$blocks" ] && [ "$got_lb" = "$peak" ] &&
		[ "$valid" = "true" ] && [ "$rpeak" -ge "$peak" ]
	s=$?
	[ $s -eq 0 ] || echo "#   $name: rc=$rc buffers $got_b/$blocks peak $got_lb/$peak recorded valid=$valid peak=$rpeak $(cat "$tmp/err")"
	ok "mtrace of $name ($blocks blocks, peak $peak) replays with -s recorded as the independent count" $s
	# The same file compressed, by extension and by magic bytes alone.
	gzip -c "$f" >"$tmp/$name.mtrace.gz"
	cp "$tmp/$name.mtrace.gz" "$tmp/$name-noext"
	s=0
	for c in "$tmp/$name.mtrace.gz" "$tmp/$name-noext"; do
		"$exe" replay "$c" -s greedy-size --json "$tmp/c.json" >/dev/null 2>&1 &&
			[ "$(json "$tmp/c.json" buffers)" = "$blocks" ] &&
			[ "$(json "$tmp/c.json" lower_bound)" = "$peak" ] || s=1
	done
	if command -v zstd >/dev/null; then
		zstd -q -c "$f" >"$tmp/$name.mtrace.zst"
		"$exe" replay "$tmp/$name.mtrace.zst" -s greedy-size --json "$tmp/c.json" >/dev/null 2>&1 &&
			[ "$(json "$tmp/c.json" buffers)" = "$blocks" ] &&
			[ "$(json "$tmp/c.json" lower_bound)" = "$peak" ] || s=1
	fi
	ok "mtrace of $name reads the same gzip'ed, zstd'ed and without an extension" $s
done

# heaptrack: both forms against heaptrack_print (calls to allocation
# functions; peak = the flamegraph's per-stack bytes at the peak, summed).
if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
	skip "heaptrack recordings agree with heaptrack_print" "heaptrack is not installed"
else
	for spec in "${programs[@]}"; do
		name=${spec%%:*}
		forms="interpreted raw"
		# The raw form twice is enough (it is slow to record and interpret).
		case $name in python | git) ;; *) forms=interpreted ;; esac
		for form in $forms; do
			rm -f "$tmp"/h.*
			flag=""
			[ $form = raw ] && flag="-r"
			run_program_ht() { heaptrack $flag -o "$tmp/h" "$@"; }
			case "$spec" in
			python:*) c=${spec#*:}; run_program_ht "${c%% -c *}" -c "${c#* -c }" ;;
			sqlite3:*) c=${spec#*:}; run_program_ht sqlite3 :memory: "${c#sqlite3 :memory: }" ;;
			*) c=${spec#*:}; run_program_ht $c ;;
			esac >/dev/null 2>&1
			f=$(ls "$tmp"/h.* 2>/dev/null | head -1)
			if [ -z "$f" ]; then
				skip "heaptrack ($form) of $name agrees with heaptrack_print" "heaptrack wrote nothing"
				continue
			fi
			ref=$f
			if [ $form = raw ]; then # heaptrack_print reads the interpreted form
				interp=/usr/lib/heaptrack/libexec/heaptrack_interpret
				zstd -dc <"$f" | "$interp" | zstd -q -c >"$tmp/hi.zst"
				ref=$tmp/hi.zst
			fi
			heaptrack_print -f "$ref" -p 0 -a 0 -T 0 -F "$tmp/fg" \
				--flamegraph-cost-type peak >"$tmp/hp" 2>/dev/null
			calls=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$tmp/hp")
			peak=$(awk '{s += $NF} END {print s + 0}' "$tmp/fg")
			"$exe" replay "$f" -s greedy-size --json "$tmp/r.json" >/dev/null 2>"$tmp/err"
			rc=$?
			got_b=$(json "$tmp/r.json" buffers 2>/dev/null)
			got_lb=$(json "$tmp/r.json" lower_bound 2>/dev/null)
			[ $rc -eq 0 ] && [ "$got_b" = "$calls" ] && [ "$got_lb" = "$peak" ]
			s=$?
			[ $s -eq 0 ] || echo "#   $name $form: rc=$rc buffers $got_b/$calls peak $got_lb/$peak $(cat "$tmp/err")"
			ok "heaptrack ($form) of $name: $calls allocations, peak $peak, as heaptrack_print" $s
		done
	done
fi

echo "1..$n"
[ $failed -eq 0 ]
