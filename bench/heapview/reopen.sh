#!/usr/bin/env bash
# Reopening a dump through its index (tools/heapgraph/index_cache.h) against
# opening it from scratch, on bench/hprof's generated dump (default 1e7
# objects): `readdump --dominators` with --no-index-cache, then the first open
# that writes the index, then the reopen that reads it. Prints wall time, CPU
# time, peak RSS, the index's size and the ratio.
# Usage: bench/heapview/reopen.sh [BUILD_DIR] [OBJECTS] [DIR]
set -euo pipefail
build=${1:-build}
objects=${2:-10000000}
dir=${3:-/dev/shm/libdump-bench-reopen}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
"$build/bench/hprof/make_bench_dump" "$dir/bench.dump" --objects "$objects" >/dev/null
readdump="$build/tools/readdump/readdump"
run() {  # name, args...: "name wall cpu rss_kb"
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S %M' -o "$dir/$name.time" "$readdump" --dominators --top 5 "$@" "$dir/bench.dump" \
    > "$dir/$name.out"
  read -r wall user sys rss < "$dir/$name.time"
  echo "$name $wall $(echo "$user + $sys" | bc -l) $rss"
}
results=("$(run no-index --no-index-cache)" "$(run first-open --index-dir "$dir/index")"
         "$(run reopen --index-dir "$dir/index")")
cmp -s "$dir/no-index.out" "$dir/reopen.out" || { echo "FAIL: the reopened graph answers differently"; exit 1; }
printf 'dump %.1f MB, index %.1f MB, %d objects\n' "$(echo "$(stat -c %s "$dir/bench.dump") / 1000000" | bc -l)" \
  "$(echo "$(du -b "$dir/index" | cut -f1) / 1000000" | bc -l)" "$objects"
printf '%-12s %8s %8s %10s\n' "" wall cpu "peak MiB"
for r in "${results[@]}"; do
  read -r name wall cpu rss <<< "$r"
  printf '%-12s %8.2f %8.2f %10.1f\n' "$name" "$wall" "$cpu" "$(echo "$rss / 1024" | bc -l)"
done
read -r _ w0 _ _ <<< "${results[0]}"
read -r _ w2 _ _ <<< "${results[2]}"
printf 'reopen / open without index: %.2fx the wall time\n' "$(echo "$w2 / $w0" | bc -l)"
