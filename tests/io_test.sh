#!/bin/sh
# Inputs that are not files, outputs that are not plain files, and names that
# are not plain text, end to end. Needs AS_EXE and
# AS_SOURCE_DIR (set by meson).
#
# Outputs are written through symlinks to their targets, directly into FIFOs
# and devices, and through the descriptor /dev/stdout names; never replaced.
# The CI runs as root, where a regression would turn /dev/null or
# /dev/stdout into a file: each of those is tried first on a stand-in of its
# own (a device node made here, a link to /proc/self/fd/1), and the real one
# only when the stand-in came through intact.
set -u
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"
cd "$src" || exit 1
tr=traces/small-cnn.json
gs="-s greedy-size"
esc=$(printf '\033')

# is_json FILE: FILE holds the replay's JSON object.
is_json() { grep -q '"strategy": "greedy-size", "peak": 2531328' "$1"; }
# no_temp DIR: no temporary file left in DIR.
no_temp() { [ -z "$(ls -A "$1" | grep '^\.as')" ]; }
# $nodac CMD...: CMD without root's power to read and write past file
# modes, so a mode refuses it as it would any other user; empty when not
# root, "none" when setpriv cannot drop that power here.
nodac=
if [ "$(id -u)" -eq 0 ]; then
	nodac="setpriv --bounding-set=-dac_override,-dac_read_search"
	nodac="$nodac --inh-caps=-dac_override,-dac_read_search --"
	: >"$tmp/probe" && chmod 000 "$tmp/probe"
	$nodac cat "$tmp/probe" 2>/dev/null && nodac=none
	[ "$nodac" = none ] || $nodac true 2>/dev/null || nodac=none
	rm -f "$tmp/probe"
fi

# ---- Outputs ----

mkdir "$tmp/o"
echo old >"$tmp/o/target.json"
ln -s target.json "$tmp/o/link.json"
"$exe" replay $tr $gs --json "$tmp/o/link.json" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] && [ -L "$tmp/o/link.json" ] &&
	[ "$(readlink "$tmp/o/link.json")" = target.json ] &&
	is_json "$tmp/o/target.json" && no_temp "$tmp/o"
ok "json_at_a_symlink_writes_its_target_and_the_link_stays" $?

mkdir "$tmp/o/sub"
ln -s sub/../sub/new.json "$tmp/o/dangling.json"
ln -s link.json "$tmp/o/chain.json"
"$exe" replay $tr $gs --json "$tmp/o/dangling.json" >/dev/null 2>&1 &&
	"$exe" replay $tr $gs --json "$tmp/o/chain.json" \
		--plan-out "$tmp/o/plan.csv" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] && [ -L "$tmp/o/dangling.json" ] && is_json "$tmp/o/sub/new.json" &&
	[ -L "$tmp/o/chain.json" ] && [ -L "$tmp/o/link.json" ] &&
	is_json "$tmp/o/target.json" && no_temp "$tmp/o" && no_temp "$tmp/o/sub"
ok "a_dangling_link_makes_its_target_and_a_chain_of_links_is_followed" $?

# Every output flag: --png, --svg, --plan-out, --markdown, diff --svg files.
mkdir "$tmp/o/real" "$tmp/o/vd"
for f in p.png s.svg plan.csv r.md; do
	echo old >"$tmp/o/real/$f"
	ln -s real/$f "$tmp/o/l-$f"
done
"$exe" replay $tr $gs --png "$tmp/o/l-p.png" --svg "$tmp/o/l-s.svg" \
	--plan-out "$tmp/o/l-plan.csv" >/dev/null 2>&1
rc=$?
"$exe" replay tests/diff/recorded-worse.csv $gs --json "$tmp/o/b.json" \
	>/dev/null 2>&1
"$exe" diff "$tmp/o/b.json" "$tmp/o/b.json" --markdown "$tmp/o/l-r.md" \
	>/dev/null 2>&1
rc=$((rc + $?))
svgname=tests_diff_recorded-worse.csv.svg
echo old >"$tmp/o/real/$svgname"
ln -s ../real/$svgname "$tmp/o/vd/$svgname"
"$exe" diff -s greedy-size -s recorded tests/diff/recorded-worse.csv \
	--svg "$tmp/o/vd" >/dev/null 2>&1
[ $? -eq 1 ] || rc=$((rc + 1))
bad=0
for f in l-p.png l-s.svg l-plan.csv l-r.md vd/$svgname; do
	[ -L "$tmp/o/$f" ] || bad=1
done
[ "$(head -c 4 "$tmp/o/real/p.png" | tail -c 3)" = PNG ] &&
	grep -q '<svg' "$tmp/o/real/s.svg" &&
	grep -q '^id,lower,upper,size,offset' "$tmp/o/real/plan.csv" &&
	grep -q '^### allocscope diff' "$tmp/o/real/r.md" &&
	grep -q '<svg' "$tmp/o/real/$svgname" || bad=1
no_temp "$tmp/o/real" && no_temp "$tmp/o/vd" || bad=1
ok "png_svg_plan_out_markdown_and_diff_svg_write_through_links" $((rc + bad))

mkfifo "$tmp/o/out.fifo"
cat "$tmp/o/out.fifo" >"$tmp/o/fifo.got" &
reader=$!
timeout 20 "$exe" replay $tr $gs --json "$tmp/o/out.fifo" >/dev/null 2>&1
rc=$?
# The reader ends at the writer's close; one still waiting got nothing.
k=0
while kill -0 $reader 2>/dev/null && [ $k -lt 40 ]; do
	sleep 0.05; k=$((k + 1))
done
kill $reader 2>/dev/null
wait $reader
[ $rc -eq 0 ] && [ -p "$tmp/o/out.fifo" ] && is_json "$tmp/o/fifo.got" &&
	no_temp "$tmp/o"
ok "json_at_a_fifo_reaches_its_reader_and_the_fifo_stays" $?

# /dev/stdout: first a link of our own to /proc/self/fd/1, then the real
# one; into a pipe, and into a file the shell appends to.
ln -s /proc/self/fd/1 "$tmp/o/stdout"
"$exe" replay $tr $gs --json "$tmp/o/stdout" 2>/dev/null | cat >"$tmp/o/piped"
is_json "$tmp/o/piped" && [ -L "$tmp/o/stdout" ] && no_temp "$tmp/o"
stand_in=$?
ok "json_at_a_link_to_proc_self_fd_1_goes_down_the_pipe" $stand_in
if [ $stand_in -eq 0 ] && [ -e /dev/stdout ]; then
	echo before >"$tmp/o/appended"
	"$exe" replay $tr $gs --json /dev/stdout 2>/dev/null | cat >"$tmp/o/piped2" &&
		"$exe" replay $tr $gs --json /dev/stdout >>"$tmp/o/appended" 2>/dev/null
	rc=$?
	[ $rc -eq 0 ] && is_json "$tmp/o/piped2" &&
		[ "$(head -n 1 "$tmp/o/appended")" = before ] &&
		is_json "$tmp/o/appended" &&
		{ [ -L /dev/stdout ] || [ -c /dev/stdout ]; }
	ok "json_at_dev_stdout_reaches_the_pipe_or_file_and_dev_stdout_stays" $?
else
	skip json_at_dev_stdout "the stand-in failed or no /dev/stdout"
fi

# A character device: a node of our own (mknod needs root), then /dev/null.
if mknod "$tmp/o/null" c 1 3 2>/dev/null; then
	"$exe" replay $tr $gs --json "$tmp/o/null" >/dev/null 2>&1
	rc=$?
	[ $rc -eq 0 ] && [ -c "$tmp/o/null" ] && no_temp "$tmp/o"
	stand_in=$?
elif [ "$(id -u)" -ne 0 ]; then
	stand_in=0 # not root: /dev/null cannot be replaced anyway
else
	stand_in=1
fi
if [ $stand_in -eq 0 ]; then
	"$exe" replay $tr $gs --json /dev/null >"$tmp/o/devnull.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] && [ -c /dev/null ] && [ ! -s "$tmp/o/devnull.out" ]
	ok "json_at_a_character_device_writes_it_and_dev_null_stays_a_device" $?
else
	skip json_at_dev_null "no device node of our own to try first"
fi

# 255 bytes: the most a name can have on most file systems.
j=$(printf '%0250d' 0 | tr 0 j).json
g=$(printf '%0251d' 0 | tr 0 g).png
c=$(printf '%0251d' 0 | tr 0 c).csv
"$exe" replay $tr $gs --json "$tmp/o/$j" --png "$tmp/o/$g" \
	--plan-out "$tmp/o/$c" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/#   /' "$tmp/err"
[ $rc -eq 0 ] && [ ${#j} -eq 255 ] && [ ${#g} -eq 255 ] && [ ${#c} -eq 255 ] &&
	is_json "$tmp/o/$j" && [ -s "$tmp/o/$g" ] && [ -s "$tmp/o/$c" ] &&
	no_temp "$tmp/o"
ok "outputs_with_255_byte_names_are_written" $?

echo old >"$tmp/o/mode.json"
chmod 640 "$tmp/o/mode.json"
"$exe" replay $tr $gs --json "$tmp/o/mode.json" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] && is_json "$tmp/o/mode.json" &&
	[ "$(stat -c %a "$tmp/o/mode.json")" = 640 ]
ok "a_replaced_file_keeps_its_permissions" $?

"$exe" replay $tr $gs --json "$tmp/o" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "cannot write: Is a directory" "$tmp/err"
ok "a_directory_as_output_is_refused_with_exit_2" $?

# --png/--svg/diff --svg where no file can be made: the reason, exit 2,
# and no output at all (the --json of the same run is not left either).
"$exe" replay $tr $gs --png "$tmp/o/none/x.png" --svg "$tmp/o/none/x.svg" \
	--json "$tmp/o/img.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] &&
	grep -q "o/none/x.png: cannot write: No such file or directory" "$tmp/err" &&
	grep -q "o/none/x.svg: cannot write: No such file or directory" "$tmp/err" &&
	[ ! -e "$tmp/o/none" ] && [ ! -e "$tmp/o/img.json" ] && no_temp "$tmp/o"
st=$?
[ $st -eq 0 ] || echo "#   rc=$rc: $(head -n 2 "$tmp/err")"
ok "png_and_svg_into_a_missing_directory_exit_2_saying_why" $st

# diff --markdown and explain --markdown/--json share replay's words.
"$exe" replay $tr $gs --json "$tmp/o/base.json" >/dev/null 2>&1
"$exe" diff "$tmp/o/base.json" "$tmp/o/base.json" \
	--markdown "$tmp/o/none/d.md" >/dev/null 2>"$tmp/err"
rc=$?
"$exe" explain $tr --markdown "$tmp/o/none/e.md" >/dev/null 2>>"$tmp/err"
rc=$((rc * 10 + $?))
[ $rc -eq 22 ] &&
	grep -q "o/none/d.md: cannot write: No such file or directory" "$tmp/err" &&
	grep -q "o/none/e.md: cannot write: No such file or directory" "$tmp/err" &&
	[ ! -e "$tmp/o/none" ]
st=$?
[ $st -eq 0 ] || echo "#   rc=$rc: $(head -n 2 "$tmp/err")"
ok "diff_and_explain_reports_into_a_missing_directory_exit_2_saying_why" $st

if [ "$nodac" != none ]; then
	mkdir "$tmp/o/ro"
	chmod 555 "$tmp/o/ro"
	$nodac "$exe" replay $tr $gs --png "$tmp/o/ro/x.png" \
		--svg "$tmp/o/ro/x.svg" >/dev/null 2>"$tmp/err"
	rc=$?
	$nodac "$exe" diff -s greedy-size -s recorded \
		tests/diff/recorded-worse.csv --svg "$tmp/o/ro" \
		>/dev/null 2>>"$tmp/err"
	rc2=$?
	[ $rc -eq 2 ] && [ $rc2 -eq 2 ] &&
		grep -q "o/ro/x.png: cannot write: Permission denied" "$tmp/err" &&
		grep -q "o/ro/x.svg: cannot write: Permission denied" "$tmp/err" &&
		grep -q "o/ro/$svgname: cannot write: Permission denied" \
			"$tmp/err" &&
		[ -z "$(ls -A "$tmp/o/ro")" ]
	st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc rc2=$rc2: $(head -n 3 "$tmp/err")"
	ok "png_and_svg_into_a_read_only_directory_exit_2_saying_why" $st
	chmod 755 "$tmp/o/ro"
else
	skip png_and_svg_into_a_read_only_directory "root, and setpriv cannot drop its override here"
fi

# ---- Inputs that are not files ----

printf 'id,lower,upper,size\nx,0,4,8\n' >"$tmp/t.csv"
printf 'id,lower,upper,size,offset\nx,0,4,8,0\n' >"$tmp/p.csv"
mkfifo "$tmp/in.ops" "$tmp/in.json" "$tmp/in.csv"
cp "$tmp/o/b.json" "$tmp/b.json"
# refused NAME WANT CMD...: exit 2 within a second, saying WANT.
refused() {
	name=$1 want=$2
	shift 2
	timeout 1 "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] && grep -q -- "$want" "$tmp/err"
	st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc: $(head -n 2 "$tmp/err")"
	ok "$name" $st
}
# fed NAME FIFO FILE CMD...: CMD, given FIFO while FILE is written into
# it, reads it as a stream and exits 0 within 10 seconds.
fed() {
	name=$1 fifo=$2 file=$3
	shift 3
	timeout 10 sh -c 'cat "$1" >"$2"' sh "$file" "$fifo" &
	timeout 10 "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	wait
	[ $rc -eq 0 ]
	st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc: $(head -n 2 "$tmp/err")"
	ok "$name" $st
}
fed "replay_reads_a_fifo_as_a_stream" "$tmp/in.ops" traces/server-churn.ops \
	"$exe" replay --no-progress "$tmp/in.ops" $gs
fed "check_reads_a_fifo_as_a_stream" "$tmp/in.ops" traces/cnn-recorded.csv \
	"$exe" check -f csv "$tmp/in.ops"
fed "check_reads_a_plan_from_a_fifo" "$tmp/in.csv" "$tmp/p.csv" \
	"$exe" check "$tmp/t.csv" --plan "$tmp/in.csv"
fed "diff_reads_new_from_a_fifo" "$tmp/in.json" "$tmp/b.json" \
	"$exe" diff "$tmp/b.json" "$tmp/in.json"
fed "diff_reads_base_from_a_fifo" "$tmp/in.json" "$tmp/b.json" \
	"$exe" diff "$tmp/in.json" "$tmp/b.json"
fifo="not a regular file but a FIFO"
dev="not a regular file but a character device"
refused "diff_refuses_dev_zero_at_once" "/dev/zero: $dev" \
	"$exe" diff "$tmp/b.json" /dev/zero
refused "check_plan_refuses_dev_zero_at_once" "/dev/zero: $dev" \
	"$exe" check "$tmp/t.csv" --plan /dev/zero
refused "a_directory_as_plan_is_named_a_directory" \
	"not a regular file but a directory" \
	"$exe" check "$tmp/t.csv" --plan "$tmp/o"
refused "diff_refuses_a_directory_as_base_naming_it" \
	"o: not a regular file but a directory" \
	"$exe" diff "$tmp/o" "$tmp/b.json"
refused "diff_refuses_a_directory_as_new_naming_it" \
	"o: not a regular file but a directory" \
	"$exe" diff "$tmp/b.json" "$tmp/o"
if [ "$nodac" != none ]; then
	cp "$tmp/p.csv" "$tmp/locked.csv"
	cp "$tmp/b.json" "$tmp/locked.json"
	chmod 000 "$tmp/locked.csv" "$tmp/locked.json"
	refused "check_plan_refuses_an_unreadable_file_saying_why" \
		"locked.csv: cannot open: Permission denied" \
		$nodac "$exe" check "$tmp/t.csv" --plan "$tmp/locked.csv"
	refused "diff_refuses_an_unreadable_file_saying_why" \
		"locked.json: cannot open: Permission denied" \
		$nodac "$exe" diff "$tmp/b.json" "$tmp/locked.json"
else
	skip unreadable_plan "root, and setpriv cannot drop its override here"
	skip unreadable_diff_input "root, and setpriv cannot drop its override here"
fi

"$exe" diff - "$tmp/b.json" <"$tmp/b.json" >/dev/null 2>&1
ok "diff_still_reads_standard_input_as_-" $?

# A walk skips what is not a regular file, and says so.
mkdir -p "$tmp/w/a/b"
cp $tr "$tmp/w/a/good.json"
mkfifo "$tmp/w/a/b/pipe.ops"
ln -s .. "$tmp/w/a/b/up"
timeout 10 "$exe" replay --no-progress "$tmp/w" $gs >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && grep -q "good.json" "$tmp/out" &&
	grep -q "w/a/b/pipe.ops: skipped: $fifo" "$tmp/err" &&
	grep -q "w/a/b/up: skipped: a link back to a directory this walk is in" \
		"$tmp/err"
ok "a_walk_skips_a_fifo_and_a_loop_naming_each" $?

d="$tmp/deep"
for i in $(seq 40); do d="$d/d"; done
mkdir -p "$d"
cp $tr "$d/t.json"
"$exe" replay --no-progress "$tmp/deep" $gs >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "deep\(/d\)*: directories nested more than 32 deep" "$tmp/err"
ok "a_tree_too_deep_is_refused_naming_where" $?

# ---- Names that are not plain text ----

mkdir "$tmp/n"
printf 'bogus line\n' >"$tmp/n/x${esc}[31mRED.ops"
"$exe" replay --no-progress "$tmp/n" $gs >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && ! grep -q "$esc" "$tmp/err" &&
	grep -q 'x\\x1b\[31mRED.ops:1: ' "$tmp/err"
ok "a_walk_error_escapes_the_file_name" $?

sed 's/"greedy-size"/"gs\\u001b[2J<script>alert(1)<\/script>|x"/; s/"name": "\([^"]*\)"/"name": "\1\\u001b]0;pwn\\u0007"/' \
	"$tmp/b.json" >"$tmp/evil.json"
"$exe" diff "$tmp/evil.json" "$tmp/evil.json" --all \
	--markdown "$tmp/evil.md" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 0 ] && ! grep -q "$esc" "$tmp/out" &&
	grep -q 'csv\\x1b\]0;pwn\\x07 .*gs\\x1b\[2J<script>' "$tmp/out"
ok "diff_prints_names_from_a_results_file_escaped" $?
! grep -q "$esc" "$tmp/evil.md" && ! grep -q "<script>" "$tmp/evil.md" &&
	grep -q 'gs\\x1b\\\[2J&lt;script&gt;alert(1)&lt;/script&gt;\\|x |' \
		"$tmp/evil.md"
ok "markdown_escapes_escape_sequences_html_and_table_bars" $?

# A builder error without a message (65,536 address spaces) still says one.
awk 'BEGIN { for (i = 0; i < 65600; i++) printf "alloc b%d 8 pool=p%d\n", i, i }' \
	>"$tmp/spaces.ops"
"$exe" replay "$tmp/spaces.ops" $gs >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -Eq 'spaces.ops:([0-9]+:)? .+' "$tmp/err" &&
	! grep -Eq 'spaces.ops:([0-9]+:)? *$' "$tmp/err"
ok "an_error_without_a_message_still_says_something" $?

echo "1..$n"
[ $failed -eq 0 ]
