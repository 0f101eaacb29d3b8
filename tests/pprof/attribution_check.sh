#!/bin/sh
# `go tool pprof -top` on the profiles of fixed programs (issue: callers of
# frameless code were lost):
# - pprof_attribution_program: two threads, one in memcpy and one in strlen
#   from their own functions, 1 s of CPU each at 100 Hz. Each function holds
#   half of the samples, cumulative, within the sampling bound: per-thread
#   CPU timers give each thread floor(c/T) or floor(c/T)+1 samples, and the
#   process's other threads (main, the profiler's worker) a few more, so
#   45-55 % each and >= 97 % together.
# - pprof_noalloc_program under the preload, every allocation sampled and
#   the CPU profiler on: the heap profile holds no sample.
#   attribution_check.sh ATTRIBUTION_PROGRAM NOALLOC_PROGRAM LIBDUMP_SO LIBDUMPPROF_SO WORKDIR
set -eu
P=$1
N=$2
RT=$3
PROF=$4
D=$5
. "$(dirname "$0")/go_workdir.sh"
fail=0
"$P" "$D"
top=$(go tool pprof -symbolize=none -top -cum "$D/cpu.pprof" 2>&1)
printf '%s\n' "$top" | head -12
# The cum% column (5th) of the line naming the function.
cum() { printf '%s\n' "$top" | awk -v f="$1" '$0 ~ f { sub("%", "", $5); print $5; exit }'; }
copy=$(cum 'BurnCopy')
strlen=$(cum 'BurnStrlen')
echo "cum: BurnCopy ${copy:-none}%, BurnStrlen ${strlen:-none}%"
if ! awk -v a="${copy:-0}" -v b="${strlen:-0}" 'BEGIN { exit !(a >= 45 && a <= 55 && b >= 45 && b <= 55 && a + b >= 97) }'; then
  echo "FAIL: BurnCopy and BurnStrlen should each hold 45-55 % cumulative, >= 97 % together"
  fail=1
fi

unset LIBDUMP_PROFILE_ROOT
LD_PRELOAD="$RT $PROF" LIBDUMP_HEAPPROFILE="$D/heap.pprof" LIBDUMP_CPUPROFILE="$D/noalloc_cpu.pprof" \
  LIBDUMP_MEMPROFILE_RATE=1 "$N"
raw=$(go tool pprof -symbolize=none -raw "$D/heap.pprof" 2>&1) || { echo "FAIL: go tool pprof -raw"; printf '%s\n' "$raw"; exit 1; }
# -raw lists the samples after "Samples:" and before "Locations".
samples=$(printf '%s\n' "$raw" | awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && /^ *[0-9]+ /' | wc -l)
if [ "$samples" -ne 0 ]; then
  echo "FAIL: a program that allocates nothing has $samples heap samples:"
  go tool pprof -symbolize=none -traces -sample_index=alloc_space "$D/heap.pprof" 2>&1 | head -40
  fail=1
else
  echo "ok: no heap samples for a program that allocates nothing"
fi
exit $fail
