#!/bin/bash
# Profiler overhead, side by side in one run (medians of REPS runs):
#   heap: libdump off vs 512 KiB sampling; jemalloc prof:false vs prof:true
#         (its default lg_prof_sample=19, 512 KiB); tcmalloc vs tcmalloc with
#         gperftools' HEAPPROFILE; then the profiler's cost per heap sample
#         (frame-pointer walk vs libunwind).
#   cpu:  2 threads, no profiler vs libdump at 100 Hz vs gperftools'
#         libprofiler (CPUPROFILE, CPUPROFILE_FREQUENCY=100).
# Usage: bench/pprof/run.sh [BUILD_DIR] [REPS]
set -euo pipefail
B=${1:-build}
REPS=${2:-5}
LIB=/usr/lib/x86_64-linux-gnu
ALLOC=$B/bench/pprof/bench_pprof_alloc
CPU=$B/bench/pprof/bench_pprof_cpu
DUMP=$B/libdump/libdump.so
PROF=$B/samplers/libdumpprof.so
OPS=${OPS:-10000000}      # malloc+free pairs per heap run
WORK=${WORK:-1000000000}  # iterations per thread per CPU run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() {  # run NAME ENV... -- CMD...: prints the median of REPS runs
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local m
  m=$(for i in $(seq "$REPS"); do env "${envs[@]}" "$@" 2>/dev/null; done | median)
  printf '%-40s %s\n' "$name" "$m"
  eval "R_${name//[^a-zA-Z0-9]/_}=$m"
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.1f%%", (b / a - 1) * 100}'; }

for MIX in mixed small; do
echo "== heap, $MIX sizes: ns (CPU) per malloc+free, median of $REPS"
run libdump_off LD_PRELOAD=$DUMP -- $ALLOC $OPS $MIX
run libdump_512k LD_PRELOAD="$DUMP $PROF" LIBDUMP_HEAPPROFILE=$T/h.pprof LIBDUMP_MEMPROFILE_RATE=524288 -- $ALLOC $OPS $MIX
run jemalloc LD_PRELOAD=$LIB/libjemalloc.so.2 MALLOC_CONF=prof:false -- $ALLOC $OPS $MIX
run jemalloc_prof LD_PRELOAD=$LIB/libjemalloc.so.2 MALLOC_CONF=prof:true,prof_prefix:$T/je -- $ALLOC $OPS $MIX
run tcmalloc LD_PRELOAD=$LIB/libtcmalloc.so.4 -- $ALLOC $OPS $MIX
run tcmalloc_heapprofile LD_PRELOAD=$LIB/libtcmalloc.so.4 HEAPPROFILE=$T/gp HEAP_PROFILE_ALLOCATION_INTERVAL=0 -- $ALLOC $OPS $MIX
echo "libdump 512 KiB sampling overhead:   $(pct $R_libdump_off $R_libdump_512k)"
echo "jemalloc prof:true overhead:         $(pct $R_jemalloc $R_jemalloc_prof)"
echo "gperftools HEAPPROFILE overhead:     $(pct $R_tcmalloc $R_tcmalloc_heapprofile)"
done
$B/bench/pprof/bench_pprof_sample_cost

echo "== cpu: CPU seconds for fixed 2-thread work, median of $REPS"
run none X=1 -- $CPU $WORK
run libdump_100hz LD_PRELOAD=$PROF LIBDUMP_CPUPROFILE=$T/c.pprof -- $CPU $WORK
run gperftools_100hz LD_PRELOAD=$LIB/libprofiler.so.0 CPUPROFILE=$T/g.prof CPUPROFILE_FREQUENCY=100 -- $CPU $WORK
echo "libdump CPU profiling overhead:      $(pct $R_none $R_libdump_100hz)"
echo "gperftools CPU profiling overhead:   $(pct $R_none $R_gperftools_100hz)"
go tool pprof -symbolize=none -top "$T/c.pprof" 2>/dev/null | sed -n '1,8p' || true
