#!/bin/sh
# meson install into a temporary root, then build a tiny program against the
# installed headers and library through pkg-config alone, and run it.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR [SANITIZERS]
# A sanitizer build's library needs the tiny program built with the same.
build=$1 src=$2 san=${3:-none}
sanflags=""
[ "$san" = none ] || sanflags="-fsanitize=$san"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "1..7"
n=0
check() { # check NAME COMMAND...
	n=$((n + 1)); name=$1; shift
	if "$@" >"$tmp/out" 2>&1; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"; sed 's/^/# /' "$tmp/out"
	fi
}
check install_into_a_destdir_succeeds \
	meson install -C "$build" --no-rebuild --destdir "$tmp/root" --quiet
pc=$(find "$tmp/root" -name allocscope.pc | head -n 1)
check pkg_config_file_is_installed test -n "$pc"
check public_headers_are_installed \
	test -f "$(find "$tmp/root" -path '*/include/allocscope/allocscope.h' | head -n 1)"
# Each header stands alone: a program includes the one it needs (the user
# API, build.h for readers and strategies) and nothing else before it.
each_header_compiles_alone() {
	inc=$(find "$tmp/root" -type d -path '*/include/allocscope' | head -n 1)
	[ -n "$inc" ] && [ -f "$inc/build.h" ] || return 1
	for h in "$inc"/*.h; do
		printf '#include <allocscope/%s>\n' "${h##*/}" >"$tmp/one.c"
		cc -std=c11 -Wall -Wextra -Werror -I"$inc/.." -fsyntax-only \
			"$tmp/one.c" || { echo "${h##*/}"; return 1; }
	done
}
check every_installed_header_compiles_alone each_header_compiles_alone
check man_pages_are_installed \
	test -n "$(find "$tmp/root" -name allocscope.1 | head -n 1)"
# The installed .pc names its prefix; under --destdir that prefix lives in
# $tmp/root (pkg-config's --define-prefix mishandles multiarch libdirs).
mkdir -p "$tmp/pc"
[ -n "$pc" ] && sed "s|^prefix=|prefix=$tmp/root|" "$pc" >"$tmp/pc/allocscope.pc"
export PKG_CONFIG_PATH="$tmp/pc"
check tiny_program_builds_against_the_installed_copy \
	sh -c "cc -std=c11 -Wall -Werror $sanflags -o '$tmp/tiny' '$src/tests/install/tiny.c' \
		\$(pkg-config --cflags --libs allocscope)"
check tiny_program_plans_and_validates_a_trace \
	"$tmp/tiny" "$src/traces/small-cnn.json"
