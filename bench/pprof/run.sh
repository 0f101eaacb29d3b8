#!/bin/bash
# Profiler overhead, side by side in one run:
#   heap: libdump off vs 512 KiB sampling; jemalloc prof:false vs prof:true
#         (its default lg_prof_sample=19, 512 KiB); tcmalloc vs tcmalloc with
#         gperftools' HEAPPROFILE; on two size mixes (alloc_workload.cc);
#         libdump's rate also alternated inside one process (A/A, then A/B),
#         and Go's runtime.MemProfileRate the same way on the same workload
#         (go/main.go); then the cost of one sample with every allocation
#         sampled, for libdump, jemalloc, Go and gperftools;
#         then the profiler's cost per heap sample (frame-pointer walk vs
#         libunwind, warm) and of a whole sampled malloc + free with the
#         caches as a busy program leaves them (cold_sample.cc).
#   cpu:  2 threads, no profiler vs libdump at 100 Hz vs gperftools'
#         libprofiler (CPUPROFILE, CPUPROFILE_FREQUENCY=100); each profiler
#         also started and stopped inside one process (A/A, then A/B); then
#         one sample's signal handler, each against an empty one; then
#         attribution.sh: who gets the CPU spent in frameless code.
# Every configuration runs once per round, REPS rounds, and the median of its
# runs is printed: on a shared machine load drifts over minutes, and rounds
# spread that drift over all configurations instead of charging it to
# whichever ran during a busy spell.
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
SLOW_OPS=$((OPS / 100))   # gperftools' heap profiler is ~1000x slower per op
EVERY_OPS=$((OPS / 10))   # every allocation sampled: jemalloc and Go ~2 us per op
ALT_OPS=${ALT_OPS:-$((OPS * 10))}  # operations of one in-process alternation
WORK=${WORK:-1000000000}  # iterations per thread per CPU run
# One CPU alternation: CPU_PAIRS pairs of 0.25 s blocks per thread. The
# profilers differ by ~0.3 % and one pair's ratio varies by ~±0.5 %, so it
# takes ~200 pairs (~100 s a run) for the medians to tell them apart.
CPU_PAIRS=${CPU_PAIRS:-200}
ALT_WORK=$((CPU_PAIRS * 200000000))
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
GOPEER=$T/allocpeer
(cd "$(dirname "$0")/go" && GOCACHE=$T/gocache GOFLAGS= go build -o "$GOPEER" .)

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# rounds NAME ENV... -- CMD... ; NAME ENV... -- CMD... ; ...  (one config per
# line on stdin): runs every config once per round, REPS rounds, then prints
# each config's median and sets R_<name> to it.
rounds() {
  local lines=() l
  while IFS= read -r l; do [ -n "$l" ] && lines+=("$l"); done
  for r in $(seq "$REPS"); do
    for l in "${lines[@]}"; do
      local name=${l%% *}
      eval "env ${l#* }" 2>/dev/null >>"$T/$name.times"
    done
  done
  for l in "${lines[@]}"; do
    local name=${l%% *} m
    m=$(median <"$T/$name.times")
    rm -f "$T/$name.times"
    printf '%-40s %s\n' "$name" "$m"
    eval "R_${name}=$m"
  done
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.1f%%", (b / a - 1) * 100}'; }

for MIX in mixed small; do
  echo "== heap, $MIX sizes: ns (CPU) per malloc+free, median of $REPS rounds"
  rounds <<CONFIGS
libdump_off LD_PRELOAD=$DUMP $ALLOC $OPS $MIX
libdump_512k LD_PRELOAD='$DUMP $PROF' LIBDUMP_HEAPPROFILE=$T/h.pprof LIBDUMP_MEMPROFILE_RATE=524288 $ALLOC $OPS $MIX
jemalloc LD_PRELOAD=$LIB/libjemalloc.so.2 MALLOC_CONF=prof:false $ALLOC $OPS $MIX
jemalloc_prof LD_PRELOAD=$LIB/libjemalloc.so.2 MALLOC_CONF=prof:true,prof_prefix:$T/je $ALLOC $OPS $MIX
tcmalloc LD_PRELOAD=$LIB/libtcmalloc.so.4 $ALLOC $OPS $MIX
tcmalloc_heapprofile LD_PRELOAD=$LIB/libtcmalloc.so.4 HEAPPROFILE=$T/gp HEAP_PROFILE_ALLOCATION_INTERVAL=0 $ALLOC $SLOW_OPS $MIX
jemalloc_every LD_PRELOAD=$LIB/libjemalloc.so.2 MALLOC_CONF=prof:true,lg_prof_sample:0,prof_prefix:$T/je $ALLOC $EVERY_OPS $MIX
CONFIGS
  echo "libdump 512 KiB sampling overhead:   $(pct $R_libdump_off $R_libdump_512k)"
  echo "jemalloc prof:true overhead:         $(pct $R_jemalloc $R_jemalloc_prof)"
  echo "gperftools HEAPPROFILE overhead:     $(pct $R_tcmalloc $R_tcmalloc_heapprofile)"
  # The runs above are separate processes, and the host's speed drifts
  # between them by more than the profiler costs. Alternating the rate inside
  # one process compares blocks a few milliseconds apart, with an A/A line
  # for the method's own noise.
  for RATE in 0 524288; do
    LD_PRELOAD="$DUMP $PROF" LIBDUMP_HEAPPROFILE=$T/alt.pprof $ALLOC $ALT_OPS $MIX alternate $RATE 40
  done
  # Go zeroes and collects what it allocates, so its time per operation is
  # several times libdump's and the same cost per sample is a smaller share.
  "$GOPEER" -mix $MIX -ops $OPS -rate 524288 -pairs 40
  # The cost of one sample itself, warm (every allocation sampled: rate 1,
  # lg_prof_sample:0; gperftools records every allocation anyway): the
  # alternating runs' median overhead times their time per operation.
  per_sample() { sed -n 's/.*median \([-+0-9.]*\)%.*, \([0-9.]*\) ns\/op off/\1 \2/p' | awk '{printf "%.0f", $1 / 100 * $2}'; }
  every_libdump=$(LD_PRELOAD="$DUMP $PROF" LIBDUMP_HEAPPROFILE=$T/alt.pprof $ALLOC $OPS $MIX alternate 1 20 | per_sample)
  every_go=$("$GOPEER" -mix $MIX -ops $EVERY_OPS -rate 1 -pairs 20 | per_sample)
  echo "ns per sample, every allocation sampled: libdump $every_libdump," \
    "jemalloc $(awk -v a=$R_jemalloc -v b=$R_jemalloc_every 'BEGIN {printf "%.0f", b - a}')," \
    "Go $every_go, gperftools $(awk -v a=$R_tcmalloc -v b=$R_tcmalloc_heapprofile 'BEGIN {printf "%.0f", b - a}')"
done
$B/bench/pprof/bench_pprof_sample_cost
$B/bench/pprof/bench_pprof_cold_sample

echo "== cpu: CPU seconds for fixed 2-thread work, median of $REPS rounds"
# At 100 Hz both profilers cost about as much as the run-to-run noise, so each
# also runs at 1000 Hz, where the costs are ten times larger. The kernel
# (CONFIG_HZ=250 on Debian) checks CPU timers once a tick, so above 250 Hz a
# timer expires late: libdump counts the missed periods (si_overrun) and
# weights its sample, gperftools' ITIMER_PROF cannot, so its profile covers
# less CPU than was spent. Both totals are printed against the CPU time.
rounds <<CONFIGS
none $CPU $WORK
libdump_100hz LD_PRELOAD=$PROF LIBDUMP_CPUPROFILE=$T/c.pprof $CPU $WORK
gperftools_100hz LD_PRELOAD=$LIB/libprofiler.so.0 CPUPROFILE=$T/g.prof CPUPROFILE_FREQUENCY=100 $CPU $WORK
libdump_1000hz LD_PRELOAD=$PROF LIBDUMP_CPUPROFILE=$T/c1000.pprof LIBDUMP_CPUPROFILE_RATE=1000 $CPU $WORK
gperftools_1000hz LD_PRELOAD=$LIB/libprofiler.so.0 CPUPROFILE=$T/g1000.prof CPUPROFILE_FREQUENCY=1000 $CPU $WORK
CONFIGS
# The CPU time a profile accounts for, as go tool pprof totals it.
profiled() { go tool pprof -symbolize=none -top "$1" 2>/dev/null | sed -n 's/.* of \([0-9.]*m\?s\) total.*/\1/p' | head -1; }
echo "libdump CPU profiling overhead:      100 Hz $(pct $R_none $R_libdump_100hz), 1000 Hz $(pct $R_none $R_libdump_1000hz)"
echo "gperftools CPU profiling overhead:   100 Hz $(pct $R_none $R_gperftools_100hz), 1000 Hz $(pct $R_none $R_gperftools_1000hz)"
echo "CPU in the last 1000 Hz profiles:    libdump $(profiled "$T/c1000.pprof"), gperftools $(profiled "$T/g1000.prof")" \
  "(run took ~${R_none} s)"
# The same work in threads that outlive the profiler, started and stopped
# around every other block inside one process (cpu_workload.cc), with an A/A
# line for the method's noise and each profiler's signals per CPU second.
for HZ in 100 1000; do
  [ "$HZ" = 100 ] && $CPU $ALT_WORK alternate none $HZ "$CPU_PAIRS"
  LD_PRELOAD=$PROF $CPU $ALT_WORK alternate libdump $HZ "$CPU_PAIRS"
  LD_PRELOAD=$LIB/libprofiler.so.0 CPUPROFILE_FREQUENCY=$HZ $CPU $ALT_WORK alternate gperftools $HZ "$CPU_PAIRS" 2>/dev/null
done
# One sample's handler, each profiler against an empty one: the part of a
# sample's cost that is the profiler's own code (the rest, the kernel's
# delivery, both pay).
SIG=$B/bench/pprof/bench_pprof_signal_cost
sig_ns() { sed -n 's/^\([0-9]*\) ns.*/\1/p'; }
sig_none=$("$SIG" | sig_ns)
sig_libdump=$(LD_PRELOAD=$PROF LIBDUMP_CPUPROFILE=$T/s.pprof "$SIG" | sig_ns)
sig_gperftools=$(LD_PRELOAD=$LIB/libprofiler.so.0 CPUPROFILE=$T/s.prof "$SIG" 2>/dev/null | sig_ns)
echo "ns per SIGPROF sample above an empty handler ($sig_none ns): libdump $((sig_libdump - sig_none))," \
  "gperftools $((sig_gperftools - sig_none))"
go tool pprof -symbolize=none -top "$T/c.pprof" 2>/dev/null | sed -n '1,8p' || true
echo "== cpu: attribution in code without frame pointers (attribution.sh)"
"$(dirname "$0")/attribution.sh" "$B" 3
