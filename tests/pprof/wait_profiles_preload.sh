#!/bin/sh
# The preload's block and mutex profiles, read back with `go tool pprof`:
# written at exit, at a SIGTERM exit, and on LIBDUMP_PROFILE_SIGNAL, under
# libdump.so and under libdumpprof.so (the program's own malloc).
#   wait_profiles_preload.sh LIBDUMP_SO LIBDUMPPROF_SO LOCK_PROGRAM WORKDIR
set -eu
RT=$1
PROF=$2
PROG=$3
D=$4
. "$(dirname "$0")/go_workdir.sh"
unset LIBDUMP_PROFILE_ROOT LIBDUMP_BLOCKPROFILE_RATE LIBDUMP_MUTEXPROFILE_FRACTION LIBDUMP_PROFILE_SIGNAL || true
fail=0
say_fail() { echo "FAIL: $*"; fail=1; }
# expect FILE: a contentions profile in which LockWorker waited (block) or
# released while others waited (mutex): 4 threads x 20 turns of 2 ms hold
# make at least 60 contentions and about 3 x 160 ms of waiting.
expect() {
  if ! out=$(go tool pprof -symbolize=none -raw "$1" 2>&1); then
    say_fail "go tool pprof cannot read $1"; printf '%s\n' "$out" | head -5; return
  fi
  printf '%s\n' "$out" | grep -q "PeriodType: contentions count" || say_fail "$1 is not a contentions profile"
  top=$(go tool pprof -symbolize=none -top -cum -sample_index=delay "$1" 2>&1)
  printf '%s\n' "$top" | grep -Eq "^ +0 +0% +[0-9.]+% +[0-9.]+(ms|s) .*LockWorker" ||
    { say_fail "$1: no delay under LockWorker"; printf '%s\n' "$top" | head -12; }
}

for lib in "$RT" "$PROF"; do
  P=$D/$(basename "$lib" .so); mkdir -p "$P"
  LD_PRELOAD="$lib" LIBDUMP_BLOCKPROFILE="$P/block.pprof" LIBDUMP_MUTEXPROFILE="$P/mutex.pprof" "$PROG" none ||
    say_fail "$lib: exit status $?"
  expect "$P/block.pprof"
  expect "$P/mutex.pprof"

  # SIGTERM: written, then the signal ends the process as it would have.
  LD_PRELOAD="$lib" LIBDUMP_BLOCKPROFILE="$P/term-block.pprof" LIBDUMP_MUTEXPROFILE="$P/term-mutex.pprof" \
    LIBDUMP_BLOCKPROFILE_RATE=10000 LIBDUMP_MUTEXPROFILE_FRACTION=1 "$PROG" TERM && st=0 || st=$?
  [ $st = 143 ] || say_fail "$lib: SIGTERM exit status $st, want 143"
  expect "$P/term-block.pprof"
  expect "$P/term-mutex.pprof"

  # The snapshot signal: PATH.1 while running, PATH at exit.
  LD_PRELOAD="$lib" LIBDUMP_BLOCKPROFILE="$P/sig-block.pprof" LIBDUMP_MUTEXPROFILE="$P/sig-mutex.pprof" \
    LIBDUMP_PROFILE_SIGNAL=USR1 "$PROG" USR1 "$P/sig-mutex.pprof.1" || say_fail "$lib: USR1 exit status $?"
  for f in sig-block.pprof.1 sig-mutex.pprof.1 sig-block.pprof sig-mutex.pprof; do expect "$P/$f"; done
done

err=$(LD_PRELOAD="$RT" LIBDUMP_BLOCKPROFILE="$D/x.pprof" LIBDUMP_PROFILE_SIGNAL=KILL "$PROG" none 2>&1) ||
  say_fail "bad LIBDUMP_PROFILE_SIGNAL: exit status $?"
printf '%s\n' "$err" | grep -q "^libdump: LIBDUMP_PROFILE_SIGNAL=KILL cannot be caught; ignored\$" ||
  say_fail "no line for LIBDUMP_PROFILE_SIGNAL=KILL: [$err]"
[ $fail = 0 ] && echo "ok: block and mutex profiles at exit, at SIGTERM and on the profile signal, under both preloads"
exit $fail
