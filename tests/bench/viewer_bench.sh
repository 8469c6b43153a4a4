#!/usr/bin/env bash
# Viewer benchmark: frame times of allocscope-view on a trace of N buffers
# (default 10^6, a MiniMalloc CSV from bench_foundation), planned by
# greedy-size, in a 1280x840 window. Without a display it uses SDL's dummy
# video driver (software rendering); with DISPLAY set, the real window.
# Usage: tests/bench/viewer_bench.sh [BUILD] [N] [FRAMES] [SPEC...]
set -euo pipefail
build=${1:-build}
n=${2:-1000000}
frames=${3:-60}
shift 3 2>/dev/null || shift $#
specs=("${@:-greedy-size}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$build/tests/bench_foundation" gen "$n" "$dir/t.csv"
args=()
for s in "${specs[@]}"; do args+=(-s "$s"); done
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
	export SDL_VIDEODRIVER=${SDL_VIDEODRIVER:-dummy}
fi
"$build/viewer/allocscope-view" "$dir/t.csv" "${args[@]}" \
	--bench-frames "$frames"
