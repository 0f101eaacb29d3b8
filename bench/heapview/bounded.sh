#!/usr/bin/env bash
# heapview's open-and-index (heapview_index: graph, dominators, retained
# sizes, paths) on bench/hprof's generated dump, all in RAM and then under a
# --memory budget (the graph's arrays past half of it in files, their pages
# dropped past it), side by side: CPU seconds, wall seconds, peak RSS and
# bytes per object, with the budget. The dump and the arrays' files go to
# DIR (on disk: a 10^8-object dump is ~11 GB), removed afterwards.
# Usage: bench/heapview/bounded.sh [BUILD_DIR] [OBJECTS] [BUDGET] [DIR]
#   BUDGET: a --memory size; default 14 bytes an object (the governor
#   overshoots it by some tens of MB between its checks).
set -euo pipefail
build=${1:-build}
objects=${2:-10000000}
budget=${3:-$((objects * 14 / 1048576))M}
dir=${4:-/var/tmp/libdump-bench-bounded}
mkdir -p "$dir/arrays"
trap 'rm -rf "$dir"' EXIT
"$build/bench/hprof/make_bench_dump" "$dir/bench.dump" --objects "$objects" >/dev/null
printf 'dump %.1f MB, %d objects, budget %s, load average %s\n' \
  "$(echo "$(stat -c %s "$dir/bench.dump") / 1000000" | bc -l)" "$objects" "$budget" "$(cut -d' ' -f1-3 /proc/loadavg)"

run() {  # name, args...: "name cpu wall rss_kb"; output in $dir/name.out
  local name=$1
  shift
  /usr/bin/time -f '%U %S %e %M' -o "$dir/$name.time" "$build/bench/heapview/heapview_index" "$dir/bench.dump" "$@" \
    > "$dir/$name.out" 2>&1
  read -r user sys wall rss < "$dir/$name.time"
  echo "$name $(echo "$user + $sys" | bc -l) $wall $rss"
}
results=()
results+=("$(run in-ram)")
results+=("$(run bounded --memory "$budget" --dir "$dir/arrays")")
for name in in-ram bounded; do
  echo "$name phases:"
  grep -v '^objects\|^top' "$dir/$name.out" || true
done
# The same answer both ways.
a=$(grep '^top' "$dir/in-ram.out") b=$(grep '^top' "$dir/bounded.out")
[ "$a" = "$b" ] && echo "same top retainer: $a" || { echo "DIFFERENT: $a / $b"; exit 1; }
printf '%-10s %9s %9s %11s %13s\n' "" "CPU s" "wall s" "peak MiB" "bytes/object"
for r in "${results[@]}"; do
  read -r name cpu wall rss <<< "$r"
  printf '%-10s %9.2f %9.2f %11.1f %13.1f\n' "$name" "$cpu" "$wall" "$(echo "$rss / 1024" | bc -l)" \
    "$(echo "$rss * 1024 / $objects" | bc -l)"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
