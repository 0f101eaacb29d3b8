#!/usr/bin/env bash
# coretodump's figures (docs/COREDUMP.md, RESULTS.md here): conversion speed
# of a core read from the page cache (wall and CPU time: on a shared machine
# the CPU figure is the one that holds), peak RSS, and how long a live
# attach stops the target beside gcore on the same process.
#   bench/coredump/run.sh BINDIR [MB=2048] [DIR=/dev/shm]
set -euo pipefail
bindir=$(cd "$1" && pwd)
mb=${2:-2048}
base=${3:-/dev/shm}
coretodump=$bindir/tools/coretodump/coretodump
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "$base/coredump_bench.XXXXXX")
pid=
trap '[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
cc -O2 -pthread -o "$dir/hold_heap" "$here/hold_heap.c" -lm

"$dir/hold_heap" "$mb" "$dir/ready" &
pid=$!
for _ in $(seq 3000); do [ -e "$dir/ready" ] && break; sleep 0.1; done
[ -e "$dir/ready" ] || { echo "hold_heap did not get ready"; exit 1; }
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")

# stopped_for CMD...: runs CMD and prints how long the target was in a
# tracing stop (state t), sampled every 10 ms: the same measure for gcore
# and for coretodump --pid.
stopped_for() {
  "$@" > /dev/null 2>&1 &
  local cmd=$! first= last= now s
  while kill -0 "$cmd" 2> /dev/null; do
    s=$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null || true)
    now=$(date +%s.%N)
    if [ "$s" = t ]; then [ -n "$first" ] || first=$now; last=$now; fi
    sleep 0.01
  done
  wait "$cmd"
  [ -n "$first" ] && echo "$last - $first" | bc -l || echo 0
}
gcore_s=$(stopped_for gcore -o "$dir/core" "$pid")
core=$dir/core.$pid
core_bytes=$(stat -c %s "$core")
cat "$core" > /dev/null  # in the page cache

# Peak RSS counts the core's pages the reader maps (page cache, shared and
# reclaimable); the anonymous part is what the conversion itself holds,
# sampled every 20 ms.
best=
for i in 1 2 3; do
  rm -f "$dir/core.dump"
  /usr/bin/time -f '%e %M %U %S' -o "$dir/time" "$coretodump" -q "$core" -o "$dir/core.dump" &
  tpid=$!
  anon=0
  while kill -0 "$tpid" 2> /dev/null; do
    c=$(pgrep -P "$tpid" -x coretodump || true)
    if [ -n "$c" ]; then
      a=$(awk '/RssAnon/ {print $2}' "/proc/$c/status" 2> /dev/null || echo 0)
      [ "${a:-0}" -gt "$anon" ] && anon=$a
    fi
    sleep 0.02
  done
  wait "$tpid"
  read -r secs rss user sys < "$dir/time"
  if [ -z "$best" ] || [ "$(echo "$secs < $best" | bc -l)" = 1 ]; then best=$secs; best_rss=$rss; best_anon=$anon; fi
  cpu=$(echo "$user + $sys" | bc -l)
  if [ -z "${best_cpu:-}" ] || [ "$(echo "$cpu < $best_cpu" | bc -l)" = 1 ]; then best_cpu=$cpu; fi
done
live_stop=
for i in 1 2 3; do
  rm -f "$dir/live.dump"
  s=$(stopped_for "$coretodump" --pid "$pid" -o "$dir/live.dump")
  if [ -z "$live_stop" ] || [ "$(echo "$s < $live_stop" | bc -l)" = 1 ]; then live_stop=$s; fi
done
# And gcore twice more (the core of the first is the one converted above).
for i in 1 2; do
  s=$(stopped_for gcore -o "$dir/again" "$pid")
  rm -f "$dir/again."*
  if [ "$(echo "$s < $gcore_s" | bc -l)" = 1 ]; then gcore_s=$s; fi
done
summary=$("$coretodump" "$core" -o "$dir/summary.dump")
kill -USR1 "$pid"; wait "$pid" || true; pid=

gbps=$(echo "$core_bytes / $best / 1000000000" | bc -l)
printf 'program: %s MB held, %s MB resident; core %.2f GB (%s)\n' "$mb" $((rss_kb / 1024)) \
  "$(echo "$core_bytes / 1000000000" | bc -l)" "$summary"
printf 'conversion: %.2f s CPU (user + system) best of 3: %.2f GB/s of core per CPU second\n' \
  "$best_cpu" "$(echo "$core_bytes / $best_cpu / 1000000000" | bc -l)"
printf 'conversion: %.2f s best of 3, %.2f GB/s of core, peak RSS %d MB (%.1f %% of the core), anonymous %d MB\n' \
  "$best" "$gbps" $((best_rss / 1024)) "$(echo "$best_rss * 1024 * 100 / $core_bytes" | bc -l)" $((best_anon / 1024))
printf 'stop (state t, sampled): coretodump --pid %.2f s, gcore %.2f s (best of 3 each): gcore stops %.1fx as long\n' \
  "$live_stop" "$gcore_s" "$(echo "$gcore_s / $live_stop" | bc -l)"
