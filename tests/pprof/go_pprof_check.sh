#!/bin/sh
# Reads profiles written by libdump's profilers with the real `go tool pprof`.
#   go_pprof_check.sh PROFILE_WRITER WORKDIR
set -eu
W=$1
D=$2
. "$(dirname "$0")/go_workdir.sh"
"$W" "$D"
fail=0
check() {  # check DESCRIPTION PATTERN pprof-args...
  desc=$1; pat=$2; shift 2
  if out=$(go tool pprof -symbolize=none "$@" 2>&1) && printf '%s\n' "$out" | grep -Eq "$pat"; then
    echo "ok: $desc"
  else
    echo "FAIL: $desc: no /$pat/ in go tool pprof $*"; printf '%s\n' "$out" | head -30; fail=1
  fi
}
# -raw parses every table; pprof exits non-zero on malformed input.
check "cpu -raw" "PeriodType: cpu nanoseconds" -raw "$D/cpu.pprof"
check "cpu -top" "ProfWriterBurn" -top "$D/cpu.pprof"
check "cpu -top samples" "ProfWriterBurn" -top -sample_index=samples "$D/cpu.pprof"
check "cpu -traces" "ProfWriterBurn" -traces "$D/cpu.pprof"
check "cpu mapping with build id" "profile_writer [0-9a-f]{16,}" -raw "$D/cpu.pprof"
check "heap -raw" "PeriodType: space bytes" -raw "$D/heap.pprof"
# 600 live objects of one size class from ProfWriterAlloc; 1000 allocated.
check "heap default is inuse_space" "ProfWriterAlloc" -top "$D/heap.pprof"
check "heap inuse_objects" "^ +600 .*ProfWriterAlloc" -top -sample_index=inuse_objects "$D/heap.pprof"
check "heap alloc_objects" "^ +1000 .*ProfWriterAlloc" -top -sample_index=alloc_objects "$D/heap.pprof"
check "allocs alloc_space" "ProfWriterAlloc" -top -sample_index=alloc_space "$D/allocs.pprof"
check "allocs -traces" "bytes:" -traces "$D/allocs.pprof"
# File and line from DWARF (the writer is built with -g): the allocating
# call's line, which the writer took from __LINE__. -list reads the source
# by the absolute path DWARF gives (pprof otherwise searches the cwd first).
L=$(cat "$D/alloc_line")
check "heap -lines file:line" "ProfWriterAlloc[^ ]* .*profile_writer.cc:$L\$" -top -lines -sample_index=alloc_objects "$D/heap.pprof"
check "heap -list source line" "^ +[0-9.]+[kMG]?B? +[0-9.]+[kMG]?B? +$L: " -source_path / -list ProfWriterAlloc -sample_index=alloc_space "$D/allocs.pprof"
# Block: ProfWriterBlocked waited once, at least 45 ms (a 50 ms sleep less
# the start-up), for the mutex ProfWriterHold held; mutex: the wait charged
# to ProfWriterHold, which released it.
check "block -raw" "PeriodType: contentions count" -raw "$D/block.pprof"
check "block contentions" "^ +0 +0% +[0-9.]+% +1 +[0-9.]+% .*ProfWriterBlocked" -top -cum -sample_index=contentions "$D/block.pprof"
check "block delay" "^ +0 +0% +[0-9.]+% +(4[5-9]|[5-9][0-9]|[1-9][0-9]{2,})(\.[0-9]+)?ms .*ProfWriterBlocked" -top -cum -sample_index=delay "$D/block.pprof"
check "mutex -raw" "PeriodType: contentions count" -raw "$D/mutex.pprof"
check "mutex charged to the holder" "^ +0 +0% +[0-9.]+% +(4[5-9]|[5-9][0-9]|[1-9][0-9]{2,})(\.[0-9]+)?ms .*ProfWriterHold" -top -cum -sample_index=delay "$D/mutex.pprof"
exit $fail
