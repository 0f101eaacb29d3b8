#!/usr/bin/env bash
# Files the runtime and the profilers write by themselves, in a directory
# another user could write: a link planted at PATH.partial is refused (its
# target untouched), an existing PATH.partial is refused (its content and
# mode untouched), and what is written is mode 0600 whatever the umask.
# Then a burst of 200 dump signals: every dump reported is a distinct,
# valid file; none replaced another.
#   output_safety.sh BINDIR
set -euo pipefail
bindir=$(cd "$1" && pwd)
lib=$bindir/libdump/libdump.so
prof=$bindir/samplers/libdumpprof.so
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }
umask 022
work='d = {i: str(i) for i in range(1000)}'

# Profiles: a link at cpu.pprof.partial, an existing heap.pprof.partial.
echo precious > victim
ln -s "$dir/victim" cpu.pprof.partial
echo theirs > heap.pprof.partial
chmod 0644 heap.pprof.partial
PYTHONMALLOC=malloc LD_PRELOAD="$lib $prof" LIBDUMP_CPUPROFILE=cpu.pprof LIBDUMP_HEAPPROFILE=heap.pprof \
  python3 -c "$work" 2> err
[ "$(cat victim)" = precious ] || fail "the CPU profile went through the planted link"
[ -L cpu.pprof.partial ] || fail "the planted link was removed"
[ "$(cat heap.pprof.partial)" = theirs ] || fail "the existing heap.pprof.partial was reused"
[ "$(stat -c %a heap.pprof.partial)" = 644 ] || fail "the existing heap.pprof.partial changed mode"
[ ! -e cpu.pprof ] && [ ! -e heap.pprof ] || fail "a profile was written through a refused partial file"
grep -q 'CPU profile cpu.pprof.partial not written: File exists' err || fail "no report of the refused CPU profile: $(cat err)"
grep -q 'heap profile heap.pprof.partial not written: File exists' err || fail "no report of the refused heap profile: $(cat err)"
rm -f cpu.pprof.partial heap.pprof.partial err

# Nothing planted: both profiles, mode 0600.
PYTHONMALLOC=malloc LD_PRELOAD="$lib $prof" LIBDUMP_CPUPROFILE=cpu.pprof LIBDUMP_HEAPPROFILE=heap.pprof \
  python3 -c "$work"
for f in cpu.pprof heap.pprof; do
  [ "$(stat -c %a $f)" = 600 ] || fail "$f has mode $(stat -c %a $f)"
done
echo "PASS: profiles refuse planted partial files and are written 0600"

# Heap dumps: a link at the partial name of the first dump.
ln -s "$dir/victim" linked.dump.partial
PYTHONMALLOC=malloc LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/linked.dump" \
  python3 -c 'import os, signal, time; os.kill(os.getpid(), signal.SIGUSR2); time.sleep(2)' 2> err
[ "$(cat victim)" = precious ] || fail "the heap dump went through the planted link"
grep -q 'cannot create heap dump .*linked.dump.partial on signal SIGUSR2: File exists' err || fail "no report: $(cat err)"
echo "PASS: a heap dump refuses a planted link"
rm -f linked.dump.partial err

# 200 dump signals in a burst, one name (no %n): nothing lost or replaced.
PYTHONMALLOC=malloc LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/burst.dump" \
  python3 -c '
import os, signal, sys, time
d = {i: str(i) * 10 for i in range(20000)}
for _ in range(200):
    os.kill(os.getpid(), signal.SIGUSR2)
    time.sleep(0.001)
time.sleep(1)
# Wait (at most a minute) until no dump is being written.
end = time.time() + 60
while any(f.endswith(".partial") for f in os.listdir(sys.argv[1])) and time.time() < end:
    time.sleep(0.1)
time.sleep(0.5)
' "$dir" 2> err
written=$(grep -c 'written to' err || true)
[ "$written" -gt 0 ] || fail "no dump: $(cat err)"
! grep -q 'failed\|cannot' err || fail "$(grep 'failed\|cannot' err)"
names=$(sed -n 's/.*written to //p' err | sort -u | wc -l)
[ "$names" = "$written" ] || fail "$written dumps reported, $names distinct names"
files=$(ls burst.dump* | wc -l)
[ "$files" = "$written" ] || fail "$written dumps reported, $files files"
for f in burst.dump*; do "$readdump" --validate "$f" > /dev/null || fail "$f does not validate"; done
requests=$(grep 'written to' err | sed -n 's/.*(\([0-9]*\) requests coalesced).*/\1/p' | paste -sd+ | bc)
singles=$(grep 'written to' err | grep -vc coalesced || true)
echo "PASS: 200 dump signals in a burst: $written dumps, $written files, all valid" \
     "($singles single, ${requests:-0} requests coalesced into the others)"
