#!/bin/bash
# The block and mutex profiles' overhead on a lock-heavy workload
# (lock_workload.cc: 8 threads, 2 mutexes, a condition-variable hand-off
# every 16 operations), side by side in one run:
#   libdump: profiles off vs on at Go's usual settings (block rate 10 us,
#            mutex fraction 100), alternated in one process, with an A/A line,
#            then each profile alone;
#   Go:      the same workload and rates (go/locks/main.go), the same way;
#   Abseil:  the workload on absl::Mutex and absl::CondVar, with a mutex
#            profile at fraction 100 built on absl::RegisterMutexProfiler
#            (lock_workload_absl.cc), the same way; built when libabsl-dev
#            is installed (apt-get install libabsl-dev: benchmark only);
#   the interposition's cost when off: the same program built without it
#            (bench_pprof_locks_plain) against it, REPS rounds of separate
#            processes, medians; and an uncontended lock+unlock in one thread
#            (the fast path alone, in thread CPU time).
# Each line gives the medians of the per-pair ratios of the process's CPU
# time (user + system) and of wall time. On a loaded machine the A/A lines
# show the method's noise; read the others against them.
# Usage: bench/pprof/run_locks.sh [BUILD_DIR] [PAIRS] [REPS]
set -euo pipefail
B=${1:-build}
PAIRS=${2:-40}
REPS=${3:-7}
OPS=${OPS:-500000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
(cd "$(dirname "$0")/go/locks" && GOCACHE=$T/gocache GOFLAGS= go build -o "$T/golocks" .)
L=$B/bench/pprof/bench_pprof_locks
echo "== locks: $OPS operations per block, $PAIRS pairs, ratios on/off; $(uptime)"
"$L" "$OPS" aa "$PAIRS"
"$L" "$OPS" alternate "$PAIRS"
LOCKS_PROFILES=block "$L" "$OPS" alternate "$PAIRS"
LOCKS_PROFILES=mutex "$L" "$OPS" alternate "$PAIRS"
"$T/golocks" -ops "$OPS" -pairs "$PAIRS" -aa
"$T/golocks" -ops "$OPS" -pairs "$PAIRS"
if [ -x "$B/bench/pprof/bench_pprof_locks_absl" ]; then
  "$B/bench/pprof/bench_pprof_locks_absl" "$OPS" aa "$PAIRS"
  "$B/bench/pprof/bench_pprof_locks_absl" "$OPS" alternate "$PAIRS"
else
  echo "abseil: not built (apt-get install libabsl-dev, then reconfigure)"
fi
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for r in $(seq "$REPS"); do
  "$B/bench/pprof/bench_pprof_locks_plain" "$OPS" >>"$T/plain"
  "$L" "$OPS" >>"$T/interposed"
done
p=$(median <"$T/plain") i=$(median <"$T/interposed")
echo "interposition, profiles off: $i s vs $p s without it ($(awk -v a="$p" -v b="$i" 'BEGIN {printf "%+.1f%%", (b / a - 1) * 100}'), median of $REPS)"
# The fast path alone: one thread, an uncontended std::mutex, thread CPU.
for r in $(seq "$REPS"); do
  "$B/bench/pprof/bench_pprof_locks_plain" 50000000 uncontended >>"$T/uplain"
  "$L" 50000000 uncontended >>"$T/uinterposed"
done
echo "uncontended lock+unlock: $(median <"$T/uinterposed") ns interposed (profiles off) vs $(median <"$T/uplain") ns without, median of $REPS"
