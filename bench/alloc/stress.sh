#!/usr/bin/env bash
# The allocator stress test of CI (alloc_stress_dumps_forks, 30 s) for longer:
# tests/allocator/alloc_stress.sh with its default 600 s, normal and under the debug
# heap (LIBDUMP_DEBUG_HEAP=1). Prints each run's dumps, forks and operations.
#   bench/alloc/stress.sh [BUILD_DIR] [SECONDS] [normal|debug|both]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
seconds=${2:-600}
modes=${3:-both}
cmake --build "$build" -j2 --target libdump_runtime alloc_stress_program > /dev/null
program=$(find "$build" -name alloc_stress_program -type f -perm -u+x | head -1)
status=0
for mode in normal debug; do
  [ "$modes" = both ] || [ "$modes" = "$mode" ] || continue
  debug=0
  [ "$mode" = debug ] && debug=1
  echo "== $mode heap, $seconds s ($(date -u +%FT%TZ))"
  LIBDUMP_DEBUG_HEAP=$debug "$root/tests/allocator/alloc_stress.sh" "$build" "$program" "$seconds" || status=1
done
exit $status
