#!/usr/bin/env bash
# An unmodified program (python3) run with LD_PRELOAD=libdump.so dumps its heap
# on SIGUSR2 to LIBDUMP_HEAPDUMP_PATH; the dump is private (0600) and valid.
#   heapdump_signal.sh BINDIR
set -euo pipefail
source "$(dirname "$0")/python_dump_checks.sh"
bindir=$(cd "$1" && pwd)
lib=$bindir/libdump/libdump.so
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# PYTHONMALLOC=malloc: otherwise pymalloc serves small objects from its own mmap arenas.
PYTHONMALLOC=malloc LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/py.%p.dump" \
  python3 -c '
import sys, time
data = {i: str(i) * 10 for i in range(20000)}
sys.stdout.write("ready\n"); sys.stdout.flush()
time.sleep(20)
' > "$dir/out" &
pid=$!
for _ in $(seq 100); do grep -q ready "$dir/out" 2>/dev/null && break; sleep 0.1; done
kill -USR2 "$pid"
dump=$dir/py.$pid.dump
for _ in $(seq 100); do
  # Written as $dump.partial and renamed when complete.
  [ -f "$dump" ] && break
  sleep 0.1
done
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
objects=$(check_python_dump "$dump")
echo "PASS: python3 dumped $objects objects on SIGUSR2"
