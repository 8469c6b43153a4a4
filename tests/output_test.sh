#!/bin/sh
# Outputs never touch inputs, and every write is checked.
# Needs AS_EXE and AS_SOURCE_DIR (set by meson).
#
# Every output option of every command is pointed at an input three ways:
# by its name, through a symbolic link to it, and through a dangling link
# whose target is an input's path (an input that does not exist: refused
# before the reader says so). Each must exit 2 with "OUT: is an input of
# this run", the input byte for byte as it was and no temporary file.
# Then standard output into /dev/full and closed (>&-) for every command,
# a reader that goes away with SIGPIPE ignored, in-place writes in a
# read-only directory, and the error messages.
set -u
exe=${AS_EXE:?}
src=${AS_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/tap.sh"
cd "$tmp" || exit 1

cp "$src/traces/small-cnn.json" t.json
cp "$src/tests/diff/recorded-worse.csv" r.csv
"$exe" replay t.json -s bfc --json b.json >/dev/null 2>&1 &&
	cp b.json n.json || echo "# cannot make the results files"
for f in t.json r.csv b.json n.json; do cp "$f" "$f.bak"; done
mkdir d
cp t.json d/a.json
cp t.json d/a.json.bak

# intact: every input as it was, no temporary file anywhere here.
intact() {
	for f in t.json r.csv b.json n.json d/a.json; do
		cmp -s "$f" "$f.bak" || return 1
	done
	[ -z "$(find . -name '.as*')" ]
}

# refused NAME OUT CMD...: exit 2 saying "OUT: is an input of this run".
refused() {
	name=$1 want=$2
	shift 2
	"$@" >/dev/null 2>err
	rc=$?
	[ $rc -eq 2 ] && grep -qF -- "$want: is an input of this run" err &&
		intact
	st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc: $(head -n 2 err)"
	ok "$name" $st
}

# clobber WHAT OPTION IN CMD...: CMD with OPTION pointed at input IN by
# its name, through a link to it, and through a dangling link to a missing
# input (CMD's IN replaced by gone.json for that one).
clobber() {
	what=$1 opt=$2 in=$3
	shift 3
	ln -sf "$in" link
	ln -sf gone.json dangling
	refused "${what}_naming_the_input_${in}_is_refused" "$in" \
		"$@" "$opt" "$in"
	refused "${what}_at_a_link_to_the_input_${in}_is_refused" link \
		"$@" "$opt" link
	set -- $(for a in "$@"; do
		[ "$a" = "$in" ] && a=gone.json
		printf '%s\n' "$a"
	done)
	refused "${what}_at_a_dangling_link_to_a_missing_input_is_refused" \
		dangling "$@" "$opt" dangling
	rm -f link dangling
}

# ---- Outputs never touch inputs ----

clobber replay_json --json t.json "$exe" replay t.json -s greedy-size
clobber replay_plan_out --plan-out t.json "$exe" replay t.json -s greedy-size
clobber replay_png --png t.json "$exe" replay t.json -s greedy-size
clobber replay_svg --svg t.json "$exe" replay t.json -s greedy-size
clobber replay_json_of_two_traces --json r.csv "$exe" replay r.csv t.json
clobber explain_json --json t.json "$exe" explain t.json
clobber explain_markdown --markdown t.json "$exe" explain t.json
clobber diff_markdown_at_base --markdown b.json "$exe" diff b.json n.json
clobber diff_markdown_at_new --markdown n.json "$exe" diff b.json n.json
clobber diff_two_strategies_markdown --markdown t.json \
	"$exe" diff -s bfc -s greedy-size t.json
clobber diff_by_stack_markdown --markdown t.json \
	"$exe" diff --by stack t.json d/a.json

refused "replay_json_at_a_file_a_directory_argument_holds_is_refused" \
	d/a.json "$exe" replay d -s greedy-size --json d/a.json
ln t.json hard.json
refused "replay_json_at_a_hard_link_to_the_input_is_refused" hard.json \
	"$exe" replay t.json -s greedy-size --json hard.json
rm -f hard.json
refused "replay_json_at_its_second_trace_is_refused" r.csv \
	"$exe" replay t.json r.csv -s greedy-size --json r.csv

# diff -s A -s B --svg DIR writes DIR/<trace path, '/' as '_'>.svg: the
# trace a.json's picture d/a.json.svg, when that is an input too.
mkdir s
cp t.json s/a.json.svg
cp t.json s/a.json.svg.bak
ln -s a.json.svg s/a.json
(cd s && "$exe" diff -s bfc -s greedy-size -f json a.json a.json.svg \
	--svg . >/dev/null 2>../err)
rc=$?
[ $rc -eq 2 ] && grep -qF "./a.json.svg: is an input of this run" err &&
	cmp -s s/a.json.svg s/a.json.svg.bak
ok "diff_svg_dir_picture_naming_an_input_is_refused" $?
mkdir s2 && ln -s ../t.json s2/t.json.svg
refused "diff_svg_dir_picture_at_a_link_to_an_input_is_refused" \
	s2/t.json.svg "$exe" diff -s bfc -s greedy-size t.json --svg s2
ln -s ../gone.json s2/gone.json.svg
refused "diff_svg_dir_picture_at_a_dangling_link_to_an_input_is_refused" \
	s2/gone.json.svg "$exe" diff -s bfc -s greedy-size gone.json --svg s2

# Standard input is an input: the file it is, when it is one.
refused "json_at_the_file_standard_input_reads_is_refused" t.json \
	sh -c '"$0" replay - -s greedy-size --json t.json <t.json' "$exe"
refused "json_at_the_file_dev_stdin_reads_is_refused" t.json \
	sh -c '"$0" replay /dev/stdin -s greedy-size --json t.json <t.json' "$exe"

# Standard output given as an output is checked when it is a file.
"$exe" replay t.json -s greedy-size --json /dev/stdout >>t.json 2>err
rc=$?
[ $rc -eq 2 ] && grep -qF "/dev/stdout: is an input of this run" err && intact
ok "json_at_dev_stdout_appended_to_the_input_is_refused" $?
"$exe" replay t.json -s greedy-size --json - >>t.json 2>err
rc=$?
[ $rc -eq 2 ] && grep -qF -- "-: is an input of this run" err && intact
ok "json_at_stdout_appended_to_the_input_is_refused" $?

# Outputs that are no input are written as before.
"$exe" replay t.json -s greedy-size --json out.json --plan-out p.csv \
	--png out.png --svg out.svg >/dev/null 2>err &&
	"$exe" explain t.json --json e.json --markdown e.md >/dev/null 2>>err &&
	[ -s out.json ] && [ -s p.csv ] && [ -s out.png ] && [ -s out.svg ] &&
	[ -s e.json ] && [ -s e.md ] && intact
ok "outputs_that_are_no_input_are_written" $?

# ---- Every write to standard output is checked ----

# stdout_fails NAME WANT CMD...: CMD into /dev/full and into a closed
# stdout (>&-): exit 2, saying why on stderr.
stdout_fails() {
	name=$1
	shift
	"$@" >/dev/full 2>err
	rc1=$?
	grep -q "No space left on device" err
	g1=$?
	"$@" >&- 2>err
	rc2=$?
	grep -q "Bad file descriptor" err
	g2=$?
	[ $rc1 -eq 2 ] && [ $g1 -eq 0 ] && [ $rc2 -eq 2 ] && [ $g2 -eq 0 ]
	st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc1/$rc2: $(head -n 2 err)"
	ok "${name}_into_dev_full_or_a_closed_stdout_exits_2_saying_why" $st
}
stdout_fails help "$exe" --help
stdout_fails version "$exe" --version
stdout_fails strategies "$exe" strategies
stdout_fails replay_table "$exe" replay t.json -s greedy-size
stdout_fails replay_dump "$exe" replay t.json -s bfc --dump
stdout_fails replay_json_to_stdout "$exe" replay t.json -s bfc --json -
stdout_fails replay_help "$exe" replay --help
stdout_fails check "$exe" check r.csv
stdout_fails diff_results "$exe" diff b.json n.json
stdout_fails diff_strategies "$exe" diff -s bfc -s greedy-size t.json
stdout_fails diff_by "$exe" diff --by stack t.json d/a.json
stdout_fails diff_help "$exe" diff --help
stdout_fails explain "$exe" explain t.json
stdout_fails explain_json_to_stdout "$exe" explain t.json --json -
stdout_fails explain_help "$exe" explain --help

"$exe" replay t.json -s greedy-size --json quiet.json >&- 2>err
[ $? -eq 0 ] && [ ! -s err ] && [ -s quiet.json ]
ok "a_run_that_prints_nothing_is_fine_with_stdout_closed" $?

# A reader that goes away: with SIGPIPE ignored the write fails (EPIPE),
# which is an error like any other.
awk 'BEGIN { for (i = 0; i < 60000; i++) printf "alloc b%d %d\n", i, 64 + i % 1000 }' \
	>many.ops
rc=$(
	trap '' PIPE
	{ "$exe" replay many.ops -s bfc --dump 2>err; echo $? >rc; } |
		head -c 1 >/dev/null
	cat rc
)
[ "$rc" = 2 ] && grep -q "allocscope: write error: Broken pipe" err
ok "a_dump_into_a_reader_that_goes_away_with_sigpipe_ignored_exits_2" $?

# ---- A read-only directory: the file is written in place ----

# $nodac CMD: CMD without root's power over file modes (as io_test.sh).
nodac=
if [ "$(id -u)" -eq 0 ]; then
	nodac="setpriv --bounding-set=-dac_override,-dac_read_search"
	nodac="$nodac --inh-caps=-dac_override,-dac_read_search --"
	: >probe && chmod 000 probe
	$nodac cat probe 2>/dev/null && nodac=none
	[ "$nodac" = none ] || $nodac true 2>/dev/null || nodac=none
	rm -f probe
fi
if [ "$nodac" != none ]; then
	mkdir ro
	echo old >ro/out.json
	echo old >ro/keep.json
	chmod 666 ro/out.json ro/keep.json
	chmod 555 ro
	$nodac "$exe" replay t.json -s greedy-size --json ro/out.json \
		>/dev/null 2>err
	rc=$?
	[ $rc -eq 0 ] &&
		grep -q "ro/out.json: note: its directory takes no new file: written in place, not atomically" err &&
		grep -q '"strategy": "greedy-size", "peak": 2531328' ro/out.json &&
		[ "$(tail -c 2 ro/out.json | od -An -c | tr -d ' ')" = '}\n' ] &&
		[ -z "$(ls -A ro | grep '^\.as')" ]
	st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc: $(head -n 2 err)"
	ok "a_writable_file_in_a_read_only_directory_is_written_in_place_with_a_note" $st
	printf 'alloc a 8\nfree b\n' >bad.ops
	$nodac "$exe" replay bad.ops -s greedy-size --json ro/keep.json \
		>/dev/null 2>err
	rc=$?
	[ $rc -eq 2 ] && [ "$(cat ro/keep.json)" = old ]
	ok "a_run_that_fails_leaves_the_in_place_file_as_it_was" $?
	$nodac "$exe" replay t.json -s greedy-size --json ro/new.json \
		>/dev/null 2>err
	rc=$?
	[ $rc -eq 2 ] && grep -q "ro/new.json: cannot write: Permission denied" err
	ok "a_new_file_in_a_read_only_directory_is_refused_saying_why" $?
	chmod 755 ro
else
	skip in_place_writes "root, and setpriv cannot drop its override here"
	skip in_place_failed_run "root, and setpriv cannot drop its override here"
	skip in_place_new_file "root, and setpriv cannot drop its override here"
fi

# ---- Messages that say what is wrong ----

# says NAME WANT CMD...: exit 2 with WANT on stderr.
says() {
	name=$1 want=$2
	shift 2
	"$@" >/dev/null 2>err
	rc=$?
	[ $rc -eq 2 ] && grep -qF -- "$want" err
	st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc: $(head -n 2 err)"
	ok "$name" $st
}
says "png_into_dev_full_says_no_space_left_on_device" \
	"/dev/full: write failed: No space left on device" \
	"$exe" replay t.json -s greedy-size --png /dev/full
says "svg_into_dev_full_says_no_space_left_on_device" \
	"/dev/full: write failed: No space left on device" \
	"$exe" replay t.json -s greedy-size --svg /dev/full
says "an_unknown_unit_in_an_option_is_named" \
	"option capacity=1Q: unknown unit 'Q' (K, M, G, T, P or E" \
	"$exe" replay t.json -s bfc:capacity=1Q
says "an_option_past_64_bits_says_so_with_the_maximum" \
	"option capacity=17179869184G: too large for 64 bits (at most 18446744073709551615" \
	"$exe" replay t.json -s bfc:capacity=17179869184G
says "max_regress_too_large_gives_the_range" \
	"--max-regress: '1e20' is too large (give 0 to 1000000000 percent)" \
	"$exe" diff b.json n.json --max-regress 1e20
says "max_regress_negative_says_so" \
	"--max-regress: '-1' is negative (give 0 to 1000000000 percent)" \
	"$exe" diff --by stack t.json d/a.json --max-regress -1
says "noise_ms_too_large_gives_the_range" \
	"--noise-ms: '1e10' is too large (give 0 to 1000000000 milliseconds)" \
	"$exe" diff b.json n.json --metric plan_ms --noise-ms 1e10

echo "1..$n"
[ $failed -eq 0 ]
