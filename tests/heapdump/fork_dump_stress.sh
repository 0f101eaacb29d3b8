#!/usr/bin/env bash
# Forks at any moment of a heap dump: tests/heapdump/fork_dump_program.cc under
# LD_PRELOAD=libdump.so with the dump signal, its parent dumping every 50 ms
# and every fifth child dumping itself, for SECONDS; MODE `profilers` adds
# libdumpprof.so (CPU and heap profiles, heap sampling every 4 KiB) and zstd
# dumps. Passes if no process hangs or dies, every child that was sent the
# signal wrote its own dump, and every dump written is valid. Prints the
# forks and dumps survived and the longest and median fork() of the parent.
# A hung child is reported with its stack (the program's "child N hung after
# fork K; where it is:"), then killed: the run fails, it never hangs.
#   fork_dump_stress.sh BINDIR PROGRAM SECONDS plain|profilers [MAX_FORKS]
set -euo pipefail
bindir=$(cd "$1" && pwd)
program=$2
seconds=$3
mode=$4
max_forks=${5:-0}
lib=$bindir/libdump/libdump.so
prof=$bindir/samplers/libdumpprof.so
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/dumps"
dlopened=libz.so.1
env=(LIBDUMP_HEAPDUMP_SIGNAL=USR2 "LIBDUMP_HEAPDUMP_PATH=$dir/dumps/heap.%p.%n.dump")
preload=$lib
if [ "$mode" = profilers ]; then
  preload="$lib $prof"
  env+=(LIBDUMP_HEAPDUMP_ZSTD=1 LIBDUMP_MEMPROFILE_RATE=4096
        "LIBDUMP_CPUPROFILE=$dir/cpu.%p.pprof" "LIBDUMP_HEAPPROFILE=$dir/heap.%p.pprof")
fi
status=0
# The program itself kills a child that hangs (20 s, then up to 70 s for
# gdb's report) and a fork() that does not return (60 s); the timeout here
# catches a parent that hangs anywhere else.
env "${env[@]}" LD_PRELOAD="$preload" timeout $((4 * seconds + 240)) \
  "$program" "$seconds" "$dlopened" "$dir/dumps" 0 "$max_forks" > "$dir/out" 2> "$dir/err" || status=$?
if [ "$status" != 0 ]; then
  echo "FAIL: fork_dump_program exited with $status"
  grep -v 'written to' "$dir/err" | head -80
  exit 1
fi
if grep -q 'failed\|cannot create' "$dir/err"; then
  echo "FAIL: a dump failed:"
  grep 'failed\|cannot create' "$dir/err" | head
  exit 1
fi
read -r _ forks _ signals _ child_dumps _ fork_max_us _ fork_median_us < "$dir/out"
written=$(grep -c 'written to' "$dir/err" || true)
# A dump still being written when the program exits stays PATH.partial:
# never under its final name.
complete=0
for f in "$dir"/dumps/*.dump; do
  [ -e "$f" ] || continue
  complete=$((complete + 1))
  "$readdump" --validate "$f" > /dev/null || { echo "FAIL: $f does not validate"; "$readdump" --validate "$f" | head; exit 1; }
done
# Every dump reported is there under its own name. A child that sees its
# dump exits at once, maybe before its dumper reports it: files may
# outnumber the reports by the children's dumps, never the other way.
reported=$(sed -n 's/.*written to //p' "$dir/err" | sort -u)
if [ "$(wc -l <<< "$reported")" != "$written" ]; then
  echo "FAIL: $written dumps reported written under fewer names"
  exit 1
fi
while read -r f; do
  [ -f "$f" ] || { echo "FAIL: $f reported written, not there"; exit 1; }
done <<< "$reported"
if [ "$complete" -lt "$written" ] || [ "$complete" -gt $((written + child_dumps)) ]; then
  echo "FAIL: $written dumps reported written, $complete files"
  exit 1
fi
if [ "$mode" = profilers ]; then
  ls "$dir"/cpu.*.pprof "$dir"/heap.*.pprof > /dev/null
fi
echo "PASS ($mode, ${seconds}s): $forks forks, $signals dump signals, $complete dumps written and valid" \
     "($child_dumps children signalled, each dumped itself); fork() max ${fork_max_us} us, median ${fork_median_us} us"
