#!/usr/bin/env bash
# scripts/build.sh DIR [cmake args...]: configure (once, and again when args are
# given) and build libdump into DIR.
set -euo pipefail
dir=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${LIBDUMP_JOBS:-$(nproc)}
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
elif [ $# -gt 0 ]; then
  cmake -S "$root" -B "$dir" "$@" >/dev/null  # options given again take effect
fi
cmake --build "$dir" -j "$jobs"
