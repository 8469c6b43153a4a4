#!/bin/sh
# Regenerate tests/baseline.json, the baseline of the CI gate (tests/
# diff_gate.sh): every trace in traces/ under every strategy that applies.
# A deliberate act: run it when a planner got better on purpose or when
# traces or strategies were added, review `git diff tests/baseline.json`,
# and commit it with the change that explains it.
#
#   tests/update-baseline.sh            # uses build/allocscope
#   AS_EXE=path/to/allocscope tests/update-baseline.sh
#   ninja -C build update-baseline        # the same, as a meson run target
#
# It refuses to write a baseline that holds an invalid plan, and prints how
# the new baseline differs from the old one.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
exe=${AS_EXE:-$src/build/allocscope}
if [ ! -x "$exe" ]; then
	echo "update-baseline: no $exe; build first (meson setup build && ninja -C build)" >&2
	exit 2
fi
tmp=tests/baseline.json.new
trap 'rm -f "$tmp"' EXIT
if ! "$exe" replay traces --no-progress --json "$tmp" >/dev/null; then
	echo "update-baseline: replay failed or produced an invalid plan; baseline not changed" >&2
	exit 1
fi
if [ -f tests/baseline.json ]; then
	"$exe" diff tests/baseline.json "$tmp" --metric peak || true
fi
mv "$tmp" tests/baseline.json
trap - EXIT
echo "update-baseline: wrote tests/baseline.json; review and commit it"
