#!/usr/bin/env bash
# Forks under heap dumps with the profilers on, until FORKS forks: rounds of
# tests/heapdump/fork_dump_stress.sh in `profilers` mode (libdump.so and
# libdumpprof.so preloaded, CPU and heap profiles, heap sampling every 4 KiB,
# zstd dumps, a dump signal every 50 ms, a fork every 20 ms, every fifth
# child dumping itself). A round ends at ROUND_SECONDS, at the forks still
# wanted, or at a hung child (reported with its stack, killed, counted);
# every other failure stops the run. Prints each round, then the forks, the
# hangs and the longest, 99th-percentile and median fork() the program saw.
# Needs a build with tests (scripts/build.sh build).
#   bench/fork/run.sh [BUILD_DIR] [FORKS] [ROUND_SECONDS] [PROGRAM]
# PROGRAM defaults to BUILD_DIR's tests/fork_dump_program (another build's
# libraries can be measured with this one's program).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(cd "${1:-$root/build}" && pwd)
want=${2:-2000}
round_seconds=${3:-120}
program=${4:-$bindir/tests/fork_dump_program}
lat=$(mktemp)
trap 'rm -f "$lat"' EXIT
export FORK_DUMP_LATENCIES=$lat
forks=0 hangs=0 rounds=0
while [ "$forks" -lt "$want" ]; do
  rounds=$((rounds + 1))
  before=$(wc -l < "$lat")
  line=$("$root/tests/heapdump/fork_dump_stress.sh" "$bindir" "$program" "$round_seconds" profilers $((want - forks)) 2>&1) || true
  if [[ $line == PASS* ]]; then
    echo "round $rounds: ${line#PASS }"
  elif grep -q 'hung after fork' <<< "$line"; then
    hangs=$((hangs + 1))
    echo "round $rounds: HANG: $(grep -m1 'hung after fork' <<< "$line")"
    grep -E '^#|^Thread|wchan' <<< "$line" | head -40 | sed 's/^/    /'
  else
    echo "round $rounds: FAIL"
    echo "$line"
    exit 1
  fi
  done_now=$(($(wc -l < "$lat") - before))
  [ "$done_now" -gt 0 ] || { echo "no fork in round $rounds"; exit 1; }
  forks=$((forks + done_now))
done
sort -n "$lat" | awk -v forks="$forks" -v hangs="$hangs" -v rounds="$rounds" '
  { v[NR] = $1 }
  END {
    p99 = int(NR * 0.99); if (p99 < 1) p99 = 1
    printf "total: %d forks in %d rounds, %d hung children; fork() max %.1f ms, p99 %.1f ms, median %.2f ms\n",
      forks, rounds, hangs, v[NR] / 1000, v[p99] / 1000, v[int((NR + 1) / 2)] / 1000
  }'
[ "$hangs" = 0 ]
