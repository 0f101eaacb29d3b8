#!/usr/bin/env bash
# How soon a second `heapview FILE` serves: heapview's first open of
# bench/hprof's generated dump (typing pass, dominators, the index written),
# then reopens from the index with a warm page cache and, when run as root,
# with the page cache dropped first (cold). Each row is the wall time from
# the start until heapview prints `heapview: serving URL` on stdout (the pages
# are served), the CPU time and the resident peak (VmHWM) at that moment,
# under the --memory budget. The dump and the index go
# to DIR (on disk: a 10^8-object dump is ~11 GB, its index ~4.7 GB), removed
# afterwards unless KEEP=1; an existing DIR/bench.dump is reused.
# Usage: bench/heapview/reopen_serve.sh [BUILD_DIR] [OBJECTS] [BUDGET] [DIR]
set -euo pipefail
build=${1:-build}
objects=${2:-10000000}
budget=${3:-$((objects * 14 / 1048576))M}
dir=${4:-/var/tmp/libdump-bench-reopen-serve}
mkdir -p "$dir"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
[ -s "$dir/bench.dump" ] || "$build/bench/hprof/make_bench_dump" "$dir/bench.dump" --objects "$objects" >/dev/null
heapview="$build/tools/heapview/heapview"
tick=$(getconf CLK_TCK)

serve() {  # name: "name wall cpu peak_kib" once heapview serves, then stops it
  local name=$1 out="$dir/$1.out" start pid wall
  : > "$out"
  start=$(date +%s.%N)
  "$heapview" --port 0 --quiet --memory "$budget" --index-dir "$dir/index" "$dir/bench.dump" > "$out" 2> "$dir/$name.err" &
  pid=$!
  until grep -q 'serving' "$out"; do
    kill -0 "$pid" 2>/dev/null || { echo "$name: heapview stopped: $(cat "$dir/$name.err")" >&2; exit 1; }
    sleep 0.01
  done
  wall=$(echo "$(date +%s.%N) - $start" | bc -l)
  read -r -a stat < "/proc/$pid/stat"
  local cpu peak
  cpu=$(echo "(${stat[13]} + ${stat[14]}) / $tick" | bc -l)
  peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  kill "$pid"
  wait "$pid" || true
  echo "$name $wall $cpu $peak"
}
results=("$(serve first-open)")
for k in 1 2 3; do results+=("$(serve "reopen-warm-$k")"); done
if [ "$(id -u)" = 0 ]; then
  for k in 1 2; do
    sync
    echo 3 > /proc/sys/vm/drop_caches
    results+=("$(serve "reopen-cold-$k")")
  done
fi
printf 'dump %.2f GB, index %.2f GB, %d objects, budget %s, load average %s\n' \
  "$(echo "$(stat -c %s "$dir/bench.dump") / 1000000000" | bc -l)" \
  "$(echo "$(du -cb "$dir"/index/*.ldindex | tail -1 | cut -f1) / 1000000000" | bc -l)" "$objects" "$budget" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-15s %8s %8s %10s\n' "" "wall s" "CPU s" "peak MiB"
for r in "${results[@]}"; do
  read -r name wall cpu peak <<< "$r"
  printf '%-15s %8.2f %8.2f %10.1f\n' "$name" "$wall" "$cpu" "$(echo "$peak / 1024" | bc -l)"
done
