#!/usr/bin/env bash
# The long run of tests/fork_dump_stress.sh: ROUNDS rounds of SECONDS each,
# alternating plain and with the profilers, and the totals of forks and
# dumps survived. Needs a build (scripts/build.sh build).
#   scripts/fork_dump_stress.sh [BUILD_DIR] [ROUNDS] [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${1:-$root/build}
rounds=${2:-10}
seconds=${3:-30}
forks=0 dumps=0
for i in $(seq "$rounds"); do
  mode=plain
  [ $((i % 2)) = 0 ] && mode=profilers
  line=$("$root/tests/fork_dump_stress.sh" "$bindir" "$bindir/tests/fork_dump_program" "$seconds" "$mode" 2>&1) || { echo "$line"; exit 1; }
  echo "$line"
  case $line in PASS*) ;; *) exit 1 ;; esac
  f=$(sed -n 's/.*: \([0-9]*\) forks.*/\1/p' <<< "$line")
  d=$(sed -n 's/.* \([0-9]*\) dumps written.*/\1/p' <<< "$line")
  forks=$((forks + f))
  dumps=$((dumps + d))
done
echo "total: $rounds rounds of ${seconds}s, $forks forks, $dumps dumps written and valid, no hang"
