#!/bin/sh
# One preload gives heap dumps and every profile; the profilers' own preload
# says what it cannot do instead of failing silently or being killed.
#   one_preload.sh LIBDUMP_SO LIBDUMPPROF_SO WORKDIR
# 1. LD_PRELOAD=libdump.so alone: a CPU profile (with samples), a heap
#    profile and a heap dump on SIGUSR2, in one bash process that survives
#    the signal and keeps its environment (bash has its own setenv).
# 2. LD_PRELOAD=libdumpprof.so alone: SIGUSR2 asked for as the dump signal
#    does not kill; LIBDUMP_HEAPPROFILE, LIBDUMP_HEAPDUMP_ON_OOM and the dump
#    signal each get one line on stderr; the CPU profile is still written.
# 3. Both preloaded (the old documented line): one CPU profile, no message.
set -eu
RT=$1
PROF=$2
D=$3
. "$(dirname "$0")/go_workdir.sh"
unset LIBDUMP_PROFILE_ROOT LIBDUMP_HEAPDUMP_PATH LIBDUMP_HEAPDUMP_SIGNAL LIBDUMP_HEAPDUMP_ON_OOM || true
fail=0
say_fail() { echo "FAIL: $*"; fail=1; }
# A bash that sends itself SIGUSR2, burns CPU while waiting (up to 20 s) for
# the dump $1 if it is not empty, and prints PATH-found to show its
# environment survived.
SCRIPT='kill -USR2 $$; n=0
while [ -n "$1" ] && [ ! -e "$1" ] && [ $n -lt 200 ]; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; sleep 0.1; n=$((n+1)); done
i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done
command -v ls >/dev/null && echo PATH-found'
expect_pprof() {  # FILE TYPE
  if ! out=$(go tool pprof -symbolize=none -raw "$1" 2>&1); then
    say_fail "go tool pprof cannot read $1"; printf '%s\n' "$out" | head -5; return
  fi
  printf '%s\n' "$out" | grep -q "PeriodType: $2" || say_fail "$1 is not a $2 profile"
}

P=$D/rt; rm -rf "$P"; mkdir -p "$P"
out=$(LD_PRELOAD="$RT" LIBDUMP_CPUPROFILE="$P/cpu.pprof" LIBDUMP_HEAPPROFILE="$P/heap.pprof" \
  LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$P/x.dump" bash -c "$SCRIPT" sh "$P/x.dump" 2>"$P/err") &&
  st=0 || st=$?
[ $st = 0 ] || say_fail "libdump.so: exit status $st (killed by the dump signal?)"
[ "$out" = PATH-found ] || say_fail "libdump.so: bash lost its environment: [$out]"
[ -s "$P/x.dump" ] || say_fail "libdump.so: no heap dump on SIGUSR2"
expect_pprof "$P/cpu.pprof" cpu
expect_pprof "$P/heap.pprof" space
go tool pprof -symbolize=none -top "$P/cpu.pprof" 2>&1 | grep -Eq "Total samples = [1-9]" ||
  say_fail "libdump.so: the CPU profile has no samples"
grep -q "^libdump: heap dump on signal SIGUSR2 written to $P/x.dump\$" "$P/err" ||
  say_fail "libdump.so: stderr: $(cat "$P/err")"
[ "$(grep -c . "$P/err")" = 1 ] || say_fail "libdump.so: unexpected stderr: $(cat "$P/err")"

P=$D/prof; rm -rf "$P"; mkdir -p "$P"
out=$(LD_PRELOAD="$PROF" LIBDUMP_CPUPROFILE="$P/cpu.pprof" LIBDUMP_HEAPPROFILE="$P/heap.pprof" \
  LIBDUMP_HEAPDUMP_SIGNAL=SIGUSR2 LIBDUMP_HEAPDUMP_ON_OOM=1 bash -c "$SCRIPT" sh "" 2>"$P/err") && st=0 || st=$?
[ $st = 0 ] || say_fail "libdumpprof.so: exit status $st (killed by the dump signal?)"
[ "$out" = PATH-found ] || say_fail "libdumpprof.so: bash lost its environment: [$out]"
expect_pprof "$P/cpu.pprof" cpu
[ ! -e "$P/heap.pprof" ] || say_fail "libdumpprof.so wrote a heap profile without the allocator"
for what in "LIBDUMP_HEAPDUMP_SIGNAL=SIGUSR2 needs libdump's heap dumper.*the signal is ignored" \
            "LIBDUMP_HEAPDUMP_ON_OOM=1 needs libdump's heap dumper" \
            "LIBDUMP_HEAPPROFILE needs libdump's allocator.*no heap profile is written"; do
  grep -q "^libdump: $what" "$P/err" || say_fail "libdumpprof.so: no line '$what' in: $(cat "$P/err")"
done
[ "$(grep -c . "$P/err")" = 3 ] || say_fail "libdumpprof.so: want 3 lines on stderr: $(cat "$P/err")"

P=$D/both; rm -rf "$P"; mkdir -p "$P"
out=$(LD_PRELOAD="$RT $PROF" LIBDUMP_CPUPROFILE="$P/cpu.%p.pprof" bash -c 'i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done' 2>"$P/err") ||
  say_fail "both preloads: exit status $?"
[ "$(ls "$P" | grep -c '^cpu\.')" = 1 ] || say_fail "both preloads: want one CPU profile, have: $(ls "$P")"
for f in "$P"/cpu.*.pprof; do expect_pprof "$f" cpu; done
[ ! -s "$P/err" ] || say_fail "both preloads: stderr: $(cat "$P/err")"
[ $fail = 0 ] && echo "ok: libdump.so alone dumps and profiles; libdumpprof.so alone says what it cannot do"
exit $fail
