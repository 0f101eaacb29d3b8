#!/bin/bash
# Attribution and overhead in code without frame pointers, libdump's CPU
# profiler against gperftools' libprofiler, on the same programs
# (attribution_workload.cc: two threads, each with its own burner, ~1.5 s of
# CPU each). For each program and profiler: the burners' cumulative seconds
# in go tool pprof -top -cum against the threads' CPU seconds (what a right
# profile gives them), then the process's CPU seconds with no profiler and
# with each at 100 Hz (medians of REPS rounds, each round running every
# configuration once).
# Usage: bench/pprof/attribution.sh [BUILD_DIR] [REPS]
set -euo pipefail
B=${1:-build}
REPS=${2:-3}
LIB=/usr/lib/x86_64-linux-gnu
W=$B/bench/pprof/bench_pprof_attribution
PROF=$B/samplers/libdumpprof.so
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# cum SECONDS of function $2 in libdump's profile $1 (symbolized when written).
cum() { go tool pprof -top -cum -unit=s "$1" 2>/dev/null | awk -v f="$2" '$0 ~ f { sub("s$", "", $4); print $4; exit }'; }
# The same for gperftools' profile, whose addresses go tool pprof 1.19 does
# not symbolize here: its -raw samples, with the workload's own locations
# named by addr2line (file offset = vaddr in this binary's text segment);
# 100 Hz: a sample is 0.01 s.
cum_gperftools() {
  local raw=$T/raw names=$T/names mid start off id addr m
  go tool pprof -raw -symbolize=none "$W" "$1" 2>/dev/null >"$raw"
  read -r mid start off < <(awk '/^Mappings/ { m = 1; next } m && $3 ~ /bench_pprof_attribution$/ {
      sub(":", "", $1); split($2, r, "/"); print $1, r[1], r[3]; exit }' "$raw")
  awk '/^Locations/ { l = 1; next } /^Mappings/ { l = 0 } l { sub(":", "", $1); print $1, $2, $3 }' "$raw" |
    while read -r id addr m; do
      [ "$m" = "M=$mid" ] && printf '%s 0x%x\n' "$id" $((addr - start + off - 1))
    done >"$T/locs"
  cut -d' ' -f2 "$T/locs" | addr2line -f -C -e "$W" | awk 'NR % 2 == 1' | paste -d' ' <(cut -d' ' -f1 "$T/locs") - >"$names"
  awk -v f="$2" 'FNR == NR { if (index($0, f)) hit[$1] = 1; next }
       /^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
       s && $2 ~ /:$/ { for (i = 3; i <= NF; ++i) if ($i in hit) { t += $1; break } }
       END { printf "%.2f", t / 100 }' "$names" "$raw"
}
for mode in clock libc leaf; do
  case $mode in
    clock) fns="BurnClockOne BurnClockTwo" ;;
    libc) fns="BurnCopy BurnStrlen" ;;
    leaf) fns="BurnAsm BurnLeaf" ;;
  esac
  for r in $(seq "$REPS"); do
    "$W" $mode | awk '{print $1}' >>"$T/$mode.none"
    LD_PRELOAD=$PROF LIBDUMP_CPUPROFILE=$T/$mode.pprof "$W" $mode >"$T/$mode.libdump.out"
    awk '{print $1}' "$T/$mode.libdump.out" >>"$T/$mode.libdump"
    LD_PRELOAD=$LIB/libprofiler.so.0 CPUPROFILE=$T/$mode.prof CPUPROFILE_FREQUENCY=100 "$W" $mode \
      2>/dev/null >"$T/$mode.gperftools.out"
    awk '{print $1}' "$T/$mode.gperftools.out" >>"$T/$mode.gperftools"
  done
  none=$(median <"$T/$mode.none")
  line="$mode: CPU s none $none"
  for p in libdump gperftools; do
    m=$(median <"$T/$mode.$p")
    line="$line, $p $m ($(awk -v a="$none" -v b="$m" 'BEGIN {printf "%+.1f %%", (b / a - 1) * 100}'))"
  done
  echo "$line"
  read -r _ _ _ _ _ c1 c2 <"$T/$mode.libdump.out"
  set -- $fns
  echo "  last run, threads' CPU s: $1 ${c1}, $2 ${c2}; cumulative s in the profile:" \
    "libdump $1 $(cum "$T/$mode.pprof" "$1"), $2 $(cum "$T/$mode.pprof" "$2");" \
    "gperftools $1 $(cum_gperftools "$T/$mode.prof" "$1"), $2 $(cum_gperftools "$T/$mode.prof" "$2")"
done
