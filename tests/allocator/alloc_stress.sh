#!/usr/bin/env bash
# The allocator under stress (tests/allocator/alloc_stress_program.cc) with
# LD_PRELOAD=libdump.so, heap dumps on SIGUSR2 and forks, for SECONDS.
# Passes if every block kept its pattern, every dump was written and every
# child ended. DEBUG=1 runs it under the debug heap too.
#   alloc_stress.sh BINDIR PROGRAM SECONDS
set -euo pipefail
bindir=$(cd "$1" && pwd)
program=$2
seconds=$3
lib=$bindir/libdump/libdump.so
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/d.%n.dump" \
  "$program" "$seconds" "$dir" 2> "$dir/stderr" | tee "$dir/out"
status=${PIPESTATUS[0]}
grep -v '^libdump: heap dump on signal SIGUSR2 written to ' "$dir/stderr" >&2 || true
[ "$status" = 0 ] || { echo "FAIL: exit status $status"; exit 1; }
grep -q '^ok: ' "$dir/out"
