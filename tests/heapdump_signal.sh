#!/usr/bin/env bash
# An unmodified program (python3) run with LD_PRELOAD=libdump.so dumps its heap
# on SIGUSR2 to LIBDUMP_HEAPDUMP_PATH; the dump is private (0600) and valid.
#   heapdump_signal.sh BINDIR
set -euo pipefail
bindir=$1
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
[ -f "$dump" ] || { echo "FAIL: no dump at $dump"; exit 1; }
[ ! -e "$dump.partial" ] || { echo "FAIL: $dump.partial left behind"; exit 1; }
mode=$(stat -c %a "$dump")
[ "$mode" = 600 ] || { echo "FAIL: dump mode $mode, want 600"; exit 1; }
"$readdump" --validate "$dump"
objects=$("$readdump" --json "$dump" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["objects"]["count"])')
[ "$objects" -gt 20000 ] || { echo "FAIL: only $objects objects in python3's heap"; exit 1; }
echo "PASS: python3 dumped $objects objects on SIGUSR2"
