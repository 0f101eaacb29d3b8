#!/bin/bash
# The flight recorder always on (LIBDUMP_FLIGHT_RECORDER=1, its default
# window: 10 MiB, 10 s, CPU samples at 20 Hz, waits of 10 ms or more)
# against off, on this project's CPU and lock benchmarks (bench/pprof:
# bench_pprof_cpu, 2 threads of arithmetic; bench_pprof_locks_plain,
# 8 threads on 2 mutexes with condition-variable hand-offs). Both sides
# run under the same preload (libdumpprof.so, whose pthread interposition
# then feeds the recorder its waits); only the variable differs.
# Separate processes, in pairs (off/on, the order alternating pair by
# pair), CPU time (user + sys) of each; printed: the median CPU seconds of
# each side and the median and quartiles of the per-pair ratios, beside an
# A/A line (off/off pairs) that shows the method's noise on this machine.
# Usage: bench/flight_recorder/always_on.sh [BUILD_DIR] [PAIRS]
set -euo pipefail
B=${1:-build}
PAIRS=${2:-10}
PROF=$B/samplers/libdumpprof.so
CPU_WORK=${CPU_WORK:-1000000000}  # iterations per thread: ~2.5 s of CPU here
LOCK_OPS=${LOCK_OPS:-6000000}    # ~3 s of CPU here
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cpu_seconds() {  # ENV... -- CMD...: the CPU time (user + sys) of one run
  local TIMEFORMAT='%U %S' t
  t=$({ time env "$@" >/dev/null 2>&1; } 2>&1)
  awk -v t="$t" 'BEGIN {split(t, a, " "); printf "%.4f\n", a[1] + a[2]}'
}

stats() {  # FILE: median, lower and upper quartile of its numbers
  sort -g "$1" | awk '{a[NR] = $1} END {printf "%s %s %s\n", a[int((NR + 1) / 2)], a[int((NR + 3) / 4)], a[int((3 * NR + 3) / 4)]}'
}

pairs() {  # NAME OFF_ENV ON_ENV CMD...: PAIRS pairs, ratios on/off
  local name=$1 off=$2 on=$3 a b
  shift 3
  : >"$T/off" && : >"$T/on" && : >"$T/ratio"
  for k in $(seq "$PAIRS"); do
    if [ $((k % 2)) -eq 1 ]; then
      a=$(cpu_seconds $off "$@")
      b=$(cpu_seconds $on "$@")
    else
      b=$(cpu_seconds $on "$@")
      a=$(cpu_seconds $off "$@")
    fi
    echo "$a" >>"$T/off"
    echo "$b" >>"$T/on"
    awk -v a="$a" -v b="$b" 'BEGIN {print b / a}' >>"$T/ratio"
  done
  read -r mo _ _ < <(stats "$T/off")
  read -r mn _ _ < <(stats "$T/on")
  read -r r q1 q3 < <(stats "$T/ratio")
  awk -v n="$name" -v mo="$mo" -v mn="$mn" -v r="$r" -v q1="$q1" -v q3="$q3" -v p="$PAIRS" 'BEGIN {
    printf "%-28s %d pairs: CPU s median %.3f vs %.3f; ratio median %.4f (%+.2f %%), quartiles %.4f .. %.4f\n",
      n, p, mo, mn, r, (r - 1) * 100, q1, q3 }'
}

echo "== flight recorder always on vs off (load: $(cut -d' ' -f1-3 /proc/loadavg))"
for w in cpu locks; do
  if [ "$w" = cpu ]; then
    set -- "$B/bench/pprof/bench_pprof_cpu" "$CPU_WORK"
  else
    set -- "$B/bench/pprof/bench_pprof_locks_plain" "$LOCK_OPS"
  fi
  pairs "$w A/A (off, off)" "LD_PRELOAD=$PROF" "LD_PRELOAD=$PROF" "$@"
  pairs "$w recorder on / off" "LD_PRELOAD=$PROF" "LD_PRELOAD=$PROF LIBDUMP_FLIGHT_RECORDER=1" "$@"
done
