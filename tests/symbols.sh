#!/bin/sh
# Every symbol the library exports starts with as_ (or AS_): a program that
# links liballocscope.a can have no clash with it. Names the compiler makes
# (the sanitizers' __asan_*, __odr_*) are reserved to it and left out. $1 is
# the library.
echo "1..1"
if ! command -v nm >/dev/null; then
	echo "ok 1 - every_exported_symbol_has_the_as_prefix # SKIP no nm"
	exit 0
fi
bad=$(nm -g --defined-only "$1" | awk 'NF == 3 && $2 ~ /[TDRBCGS]/ {print $3}' |
	grep -v -e '^as_' -e '^AS_' -e '^__' | sort -u)
if [ -n "$bad" ]; then
	echo "$bad" | sed 's/^/#   exported without the prefix: /'
	echo "not ok 1 - every_exported_symbol_has_the_as_prefix"
else
	echo "ok 1 - every_exported_symbol_has_the_as_prefix"
fi
