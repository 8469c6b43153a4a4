#!/usr/bin/env bash
# The viewer driven by scripts, its screenshots checked at known pixels
# (TAP). `viewer_test.sh dummy` runs without a display (SDL's dummy video
# driver); `viewer_test.sh xvfb` opens the real window under Xvfb.
# Needs AS_VIEWER, AS_PNG_PROBE and AS_SOURCE_DIR (set by meson).
set -u
mode=${1:-dummy}
view=${AS_VIEWER:?}
probe=${AS_PNG_PROBE:?}
src=${AS_SOURCE_DIR:?}
two=$src/tests/viewer/two.csv
overlap=$src/tests/viewer/overlap.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

if [ "$mode" = xvfb ]; then
	if ! command -v xvfb-run >/dev/null 2>&1 || ! command -v xauth >/dev/null 2>&1; then
		echo "1..0 # SKIP xvfb-run or xauth is missing (Debian: xvfb xauth)"
		exit 0
	fi
	# Under AddressSanitizer, leaks inside the X11 and GL libraries that SDL
	# loads with dlopen and unloads at SDL_Quit have no module to suppress
	# them by; the dummy leg checks the viewer's own leaks.
	asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	run() { env -u SDL_VIDEODRIVER ASAN_OPTIONS="$asan" \
		xvfb-run -a -s "-screen 0 1600x1200x24" "$view" "$@"; }
else
	run() { env -u DISPLAY -u WAYLAND_DISPLAY SDL_VIDEODRIVER=dummy "$view" "$@"; }
fi

ok() { # ok NAME STATUS
	n=$((n + 1))
	if [ "$2" -eq 0 ]; then
		echo "ok $n - $1 ($mode)"
	else
		echo "not ok $n - $1 ($mode)"
		failed=$((failed + 1))
	fi
}
pixel() { "$probe" "$1" "$2" "$3"; }
differ() { "$probe" diff "$@"; }
same_colour() { # same_colour A B: two colours within 8 per channel
	local a=$1 b=$2
	for k in 0 2 4; do
		local x=$((16#${a:$k:2})) y=$((16#${b:$k:2}))
		[ $((x > y ? x - y : y - x)) -le 8 ] || return 1
	done
}
script() { printf '%s\n' "$@" >"$tmp/script"; }

# In two.csv under `recorded`, fitted in the default 1280x840 window, the
# plot runs from x 63 (time 0) to 1010 (time 100) and y 758 (address 0) to
# 72 (4 KiB): `big` [0, 50) x [0, 4096) and `small` [50, 100) x [0, 1024).

if [ "$mode" = xvfb ]; then
	out=$(run "$two" --bench-frames 2 2>&1)
	echo "$out" | grep -q "video x11" 
	s=$?
	[ $s -eq 0 ] || echo "# $out"
	ok "the viewer opens a real X11 window under Xvfb" $s
fi

run "$two" -s recorded --screenshot "$tmp/plain.png"
rc=$?
big=$(pixel "$tmp/plain.png" 300 400)
small=$(pixel "$tmp/plain.png" 770 700)
empty=$(pixel "$tmp/plain.png" 770 400)
[ $rc -eq 0 ] && [ "$empty" = ffffff ] && [ "$big" != ffffff ] &&
	[ "$small" != ffffff ] && [ "$big" != "$small" ]
ok "a screenshot shows each buffer's colour where it lies and background elsewhere" $?

script "move 300 400" "wheel 3 at 300 400" "screenshot $tmp/zoom.png" \
	"key f" "move 1200 500" "screenshot $tmp/fit.png"
run "$two" -s recorded --script "$tmp/script"
same_colour "$(pixel "$tmp/plain.png" 700 700)" "$small" &&
	same_colour "$(pixel "$tmp/zoom.png" 700 700)" "$big"
ok "the wheel zooms time at the mouse: the big buffer moves under a pixel the small one had" $?
[ "$(differ "$tmp/plain.png" "$tmp/fit.png" 0 0 1280 790)" -lt 20 ]
ok "f fits everything again" $?

script "wheel 5 at 770 750 ctrl" "screenshot $tmp/addr.png"
run "$two" -s recorded --script "$tmp/script"
same_colour "$(pixel "$tmp/addr.png" 770 400)" "$small"
ok "ctrl and the wheel zoom addresses: the small buffer grows tall" $?

script "drag 500 400 300 400" "screenshot $tmp/drag.png"
run "$two" -s recorded --script "$tmp/script"
same_colour "$(pixel "$tmp/plain.png" 400 700)" "$big" &&
	same_colour "$(pixel "$tmp/drag.png" 400 700)" "$small"
ok "dragging pans time" $?

script "move 300 400" "screenshot $tmp/hover.png" "click 300 400" \
	"screenshot $tmp/selected.png" "key Escape" "screenshot $tmp/unselected.png"
run "$two" -s recorded --script "$tmp/script"
d1=$(differ "$tmp/plain.png" "$tmp/hover.png" 300 400 700 600)
d2=$(differ "$tmp/hover.png" "$tmp/selected.png" 60 60 1010 758)
d3=$(differ "$tmp/hover.png" "$tmp/unselected.png" 60 60 1010 758)
[ "$d1" -gt 500 ]
ok "hovering a buffer shows a tooltip" $?
[ "$d2" -gt 500 ] && [ "$(pixel "$tmp/selected.png" 536 400)" = 000000 ]
ok "a click selects the buffer and outlines it" $?
[ "$d3" -lt 20 ]
ok "Escape clears the selection" $?

script "dclick 770 700" "screenshot $tmp/dclick.png"
run "$two" -s recorded --script "$tmp/script"
same_colour "$(pixel "$tmp/dclick.png" 500 400)" "$small" &&
	same_colour "$(pixel "$tmp/dclick.png" 800 300)" "$small"
ok "a double click zooms to the buffer" $?

script "key /" "type small" "key Return" "screenshot $tmp/search.png"
run "$two" -s recorded --script "$tmp/script"
same_colour "$(pixel "$tmp/search.png" 500 400)" "$small"
ok "/ finds a buffer by name and zooms to it" $?

script "screenshot $tmp/s1.png" "key Tab" "screenshot $tmp/s2.png" \
	"key 1" "screenshot $tmp/s3.png" "key c" "screenshot $tmp/s4.png"
run "$two" -s recorded -s greedy-size --script "$tmp/script"
[ "$(differ "$tmp/s1.png" "$tmp/s2.png" 0 30 700 48)" -gt 50 ] &&
	[ "$(differ "$tmp/s1.png" "$tmp/s3.png" 0 30 700 48)" -lt 5 ] &&
	[ "$(differ "$tmp/s1.png" "$tmp/s4.png" 0 300 1010 790)" -gt 1000 ]
ok "Tab and 1 switch the strategy in the title; c stacks every strategy" $?

script "key p" "screenshot $tmp/peak.png"
run "$two" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/plain.png" "$tmp/peak.png" 63 60 400 200)" -gt 200 ]
ok "p lists the buffers live at the peak" $?

# two.csv peaks at t 0 (big, alone): p shows a window of a fortieth of
# the trace (at least 20 units) from there, so big fills the plot's width.
script "key p" "key Escape" "screenshot $tmp/peakzoom.png"
run "$two" -s recorded --script "$tmp/script"
same_colour "$(pixel "$tmp/peakzoom.png" 1000 400)" "$big"
ok "p zooms to the peak moment, not to the lives of what is live there" $?

script "move 600 740" "screenshot $tmp/k1.png" "key Left" "screenshot $tmp/k2.png"
run "$two" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/k1.png" "$tmp/k2.png" 0 800 1280 840)" -gt 30 ]
ok "the status bar follows a keyboard pan without a mouse move" $?

script "key t" "move 300 400" "screenshot $tmp/cursor.png" "key g" \
	"move 301 400" "screenshot $tmp/cursor-g.png"
run "$two" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/hover.png" "$tmp/cursor.png" 700 75 1005 110)" -gt 200 ] &&
	[ "$(differ "$tmp/cursor.png" "$tmp/cursor-g.png" 700 75 1005 110)" -gt 20 ]
ok "t lists what is live at the mouse's time, g groups it" $?

script "move 700 400" "screenshot $tmp/a0.png" "key a" "screenshot $tmp/a1.png"
run "$two" -s bfc --script "$tmp/script"
[ "$(differ "$tmp/a0.png" "$tmp/a1.png" 690 72 712 758)" -gt 100 ]
ok "a draws the allocator's blocks at the mouse's time" $?

script "move 200 400" "key [" "move 800 400" "key ]" "screenshot $tmp/range.png"
run "$two" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/plain.png" "$tmp/range.png" 0 822 1280 840)" -gt 100 ]
ok "[ and ] summarise a time range in the status bar" $?

script "key m" "screenshot $tmp/memory.png"
run "$two" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/plain.png" "$tmp/memory.png" 63 600 1010 758)" -gt 1000 ]
ok "m shows memory over time under the plan" $?

script "key ?" "screenshot $tmp/help.png"
run "$two" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/plain.png" "$tmp/help.png" 300 250 900 550)" -gt 2000 ]
ok "? shows the keys" $?

mkdir -p "$tmp/saves"
script "key s"
run "$two" -s recorded --save-dir "$tmp/saves" --script "$tmp/script"
[ -s "$tmp/saves/allocscope-view-1.png" ] &&
	grep -q "<svg" "$tmp/saves/allocscope-view-1.svg"
ok "s saves the view as PNG and SVG" $?

script "drop $overlap" "screenshot $tmp/drop.png"
run "$two" -s recorded --script "$tmp/script"
red=$(pixel "$tmp/drop.png" 530 500)
[ $((16#${red:0:2})) -gt 180 ] && [ $((16#${red:2:2})) -lt 100 ]
ok "a dropped trace opens, and its invalid overlap is drawn red" $?

script "screenshot $tmp/v0.png" "key v" "screenshot $tmp/v1.png"
run "$overlap" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/v0.png" "$tmp/v1.png" 60 40 700 200)" -gt 500 ] &&
	[ "$(pixel "$tmp/v1.png" 60 40)" = d62728 ]
ok "v lists the validation failures in a red box" $?

script "key /" "type t" "key Return" "move 1200 500" "screenshot $tmp/n1.png" \
	"key n" "screenshot $tmp/n2.png" "key n" "screenshot $tmp/n3.png"
run "$overlap" -s recorded --script "$tmp/script"
c1=$(pixel "$tmp/n1.png" 500 400) c2=$(pixel "$tmp/n2.png" 500 400)
[ "$c1" != ffffff ] && [ "$c2" != ffffff ] && [ "$c1" != "$c2" ] &&
	[ "$(differ "$tmp/n1.png" "$tmp/n3.png" 0 0 1280 790)" -lt 20 ]
ok "n goes to the next match and wraps around" $?

script "move 1200 500" "screenshot $tmp/r1.png" "key r" "screenshot $tmp/r2.png"
run "$two" -s recorded --script "$tmp/script"
[ "$(differ "$tmp/r1.png" "$tmp/r2.png" 0 0 1280 790)" -lt 20 ] &&
	[ "$(differ "$tmp/r1.png" "$tmp/r2.png" 0 820 1280 840)" -gt 100 ]
ok "r reloads the trace" $?

script "resize 900 600" "move 850 300" "screenshot $tmp/resized.png"
run "$two" -s recorded --script "$tmp/script"
[ "$("$probe" "$tmp/resized.png" 899 599)" != "" ] &&
	! "$probe" "$tmp/resized.png" 900 300 >/dev/null 2>&1 &&
	same_colour "$(pixel "$tmp/resized.png" 200 300)" "$big"
ok "the window resizes and the picture fills it" $?

# Errors: a clear message and exit status 2.
out=$(run "$two" --bogus 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "unknown or incomplete option '--bogus'"
ok "an unknown option is refused with status 2" $?
out=$(run "$two" --frames 0 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q -- "--frames wants a count"
ok "an out-of-range frame count is refused with status 2" $?
out=$(run "$two" --size 10x10 2>&1); rc=$?
[ $rc -eq 2 ]
ok "a window size out of range is refused with status 2" $?
cd "$src/tests/bad"
out=$(run free-twice.ops --frames 1 2>&1); rc=$?
cd "$src"
[ $rc -eq 2 ] && [ "$out" = "$(cat "$src/tests/bad/free-twice.ops.expected")" ]
ok "a trace that fails to load is reported as FILE:LINE and status 2" $?
out=$(run "$two" -s nosuch --frames 1 2>&1); rc=$?
[ $rc -eq 2 ] && [ -n "$out" ]
ok "an unknown strategy is refused with status 2" $?
script "wheel 3 at" 
out=$(run "$two" --script "$tmp/script" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "script:1: wheel wants"
ok "a malformed script step is refused with its line" $?

# Plans are made on a thread; batch runs wait for all of them, so their
# pictures do not depend on timing.
for k in 1 2; do
	run "$overlap" -s strip -s greedy-size -s bfc -s recorded --compare \
		--screenshot "$tmp/all$k.png"
done
cmp -s "$tmp/all1.png" "$tmp/all2.png" &&
	[ "$(differ "$tmp/all1.png" "$tmp/v0.png" 0 0 1280 790)" -gt 1000 ]
ok "a batch run waits for every plan: the same stacked picture every time" $?
out=$(run "$two" -s greedy-size -s bfc --time-startup 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "first frame presented at" &&
	echo "$out" | grep -q "^plan bfc shown at" &&
	echo "$out" | grep -q "^every plan shown at"
ok "--time-startup opens the window, shows every plan as it comes and exits" $?

out=$(run "$two" --bench-frames 3 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "^pan (1% of the view, whole pixels): 3 frames, min .* ms, median .* ms, p95 .* ms, max .* ms"
ok "--bench-frames prints frame times" $?

# ---- Outputs never touch inputs; every write is checked ----

mkdir "$tmp/in"
cp "$two" "$tmp/in/t.csv"
cp "$tmp/in/t.csv" "$tmp/in/t.bak"
ln -s t.csv "$tmp/in/link.png"
ln -s gone.csv "$tmp/in/dangling.png"
# clobber NAME WANT ARGS...: exit 2 saying "WANT: is an input of this run",
# the trace as it was and no screenshot or temporary file left.
clobber() {
	local name=$1 want=$2
	shift 2
	local out rc
	out=$(run "$@" 2>&1)
	rc=$?
	[ $rc -eq 2 ] && echo "$out" | grep -qF "$want: is an input of this run" &&
		cmp -s "$tmp/in/t.csv" "$tmp/in/t.bak" &&
		[ -z "$(ls -A "$tmp/in" | grep -e '^\.as' -e 'X.png')" ]
	local st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc: $out"
	ok "$name" $st
}
clobber "a screenshot naming the trace is refused" "$tmp/in/t.csv" \
	"$tmp/in/t.csv" -s recorded --screenshot "$tmp/in/t.csv"
clobber "a screenshot at a link to the trace is refused" "$tmp/in/link.png" \
	"$tmp/in/t.csv" -s recorded --screenshot "$tmp/in/link.png"
clobber "a screenshot at a dangling link to the trace's path is refused" \
	"$tmp/in/dangling.png" "$tmp/in/gone.csv" -s recorded \
	--screenshot "$tmp/in/dangling.png"
script "wait 1" "screenshot $tmp/in/t.csv"
clobber "a script's screenshot step naming the trace is refused" \
	"$tmp/in/t.csv" "$tmp/in/t.csv" -s recorded --script "$tmp/script"
script "wait 1" "screenshot $tmp/in/link.png"
clobber "a script's screenshot step at a link to the trace is refused" \
	"$tmp/in/link.png" "$tmp/in/t.csv" -s recorded --script "$tmp/script"
script "wait 1" "screenshot $tmp/script"
cp "$tmp/script" "$tmp/script.bak"
clobber "a script's screenshot step naming the script is refused" \
	"$tmp/script" "$tmp/in/t.csv" -s recorded --script "$tmp/script"
cmp -s "$tmp/script" "$tmp/script.bak"
ok "the script refused stays as it was" $?
cp "$two" "$tmp/in/other.csv"
script "drop $tmp/in/other.csv" "wait 1" "screenshot $tmp/in/other.csv"
clobber "a screenshot step naming a dropped file is refused" \
	"$tmp/in/other.csv" "$tmp/in/t.csv" -s recorded --script "$tmp/script"

# A line longer than any buffer is one step: `type` with the rest of the
# line as text, never a screenshot step cut from its tail.
{
	printf 'type '
	head -c 2042 /dev/zero | tr '\0' a
	printf ' screenshot %s\n' "$tmp/in/X.png"
} >"$tmp/script"
run "$two" -s recorded --script "$tmp/script" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] && [ ! -e "$tmp/in/X.png" ]
ok "a script line of 2,070 bytes is one step: no screenshot from its tail" $?

run "$two" -s recorded --screenshot /dev/full 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "/dev/full: write failed: No space left on device" "$tmp/err"
ok "a screenshot into /dev/full says no space left on device" $?

# stdout WHAT ARGS...: the viewer's output into /dev/full and into a
# closed descriptor: exit 2 saying why.
stdout_fails() {
	local what=$1
	shift
	run "$@" >/dev/full 2>"$tmp/err"
	local rc1=$?
	grep -q "allocscope-view: write error: No space left on device" "$tmp/err"
	local g1=$?
	run "$@" >&- 2>"$tmp/err"
	local rc2=$?
	grep -q "allocscope-view: write error: Bad file descriptor" "$tmp/err"
	local g2=$?
	[ $rc1 -eq 2 ] && [ $g1 -eq 0 ] && [ $rc2 -eq 2 ] && [ $g2 -eq 0 ]
	local st=$?
	[ $st -eq 0 ] || echo "#   rc=$rc1/$rc2: $(cat "$tmp/err")"
	ok "$what into /dev/full or a closed stdout exits 2 saying why" $st
}
stdout_fails "--help" --help
stdout_fails "--version" --version
stdout_fails "--bench-frames" "$two" --bench-frames 1
run "$two" -s recorded --screenshot "$tmp/quiet.png" >&- 2>"$tmp/err"
[ $? -eq 0 ] && [ ! -s "$tmp/err" ]
ok "a run that prints nothing is fine with stdout closed" $?

echo "1..$n"
[ $failed -eq 0 ]
