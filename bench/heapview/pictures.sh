#!/usr/bin/env bash
# heapview's pictures at N objects: bench/hprof's dump served by heapview
# (no index), the summary, the flame graph, its folded stacks and sorted or
# filtered tables fetched once each with curl (time and size), the flame
# graph's rectangles counted, then readdump --dominators --flame timed.
# Usage: bench/heapview/pictures.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build}
n=${2:-1000000}
dir=$(mktemp -d /dev/shm/libdump-bench-pictures.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
"$build/bench/hprof/make_bench_dump" "$dir/bench.dump" --objects "$n" >/dev/null
start=$(date +%s.%N)
"$build/tools/heapview/heapview" --port 0 -q --no-index-cache "$dir/bench.dump" > "$dir/out" 2> "$dir/err" &
pid=$!
url=
for _ in $(seq 1 6000); do
  url=$(sed -n 's/^heapview: serving \(http:[^ ]*\) .*/\1/p' "$dir/out")
  [ -n "$url" ] && break
  sleep 0.1
done
echo "open: $(echo "$(date +%s.%N) - $start" | bc) s"
for p in "" flame flame.folded "dominators?sort=size" "histogram?sort=name&order=desc&filter=node"; do
  curl -s -o /dev/null -w "/$p: %{time_total} s, %{size_download} bytes\n" "$url$p"
done
echo "flame rects: $(curl -s "${url}flame" | grep -o '<rect' | wc -l)"
kill -INT $pid
wait $pid || true
pid=
/usr/bin/time -f "readdump --dominators --flame: %e s wall, %U+%S s CPU, %M KiB peak" \
  "$build/tools/readdump/readdump" --dominators --flame --no-index-cache -o "$dir/heap.folded" "$dir/bench.dump"
echo "folded lines: $(wc -l < "$dir/heap.folded")"
