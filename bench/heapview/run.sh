#!/usr/bin/env bash
# heapview's open-and-index (tools/heapgraph: graph, dominators, retained
# sizes, paths) on bench/hprof's generated dump (default 1e7 objects), read as
# the dump itself and as its hprof, next to VisualVM's heap library computing
# retained sizes of the same hprof (../shared/tools/hprof-check --retained,
# when the checkout has it). Prints wall time, peak RSS and the ratios.
# Usage: bench/heapview/run.sh [BUILD_DIR] [OBJECTS] [DIR]
set -euo pipefail
build=${1:-build}
objects=${2:-10000000}
dir=${3:-/dev/shm/libdump-bench-heapview}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
"$build/bench/hprof/make_bench_dump" "$dir/bench.dump" --objects "$objects" >/dev/null
"$build/tools/dumptohprof/dumptohprof" -q "$dir/bench.dump" "$dir/bench.hprof"
printf 'dump %.1f MB, hprof %.1f MB, %d objects\n' "$(echo "$(stat -c %s "$dir/bench.dump") / 1000000" | bc -l)" \
  "$(echo "$(stat -c %s "$dir/bench.hprof") / 1000000" | bc -l)" "$objects"

run() {  # name, command...: prints "name seconds rss_kb", output to $dir/name.out
  local name=$1
  shift
  /usr/bin/time -f '%e %M' -o "$dir/$name.time" "$@" > "$dir/$name.out" 2>&1
  read -r secs rss < "$dir/$name.time"
  echo "$name $secs $rss"
}
results=()
results+=("$(run heapview-dump "$build/bench/heapview/heapview_index" "$dir/bench.dump")")
results+=("$(run heapview-hprof "$build/bench/heapview/heapview_index" "$dir/bench.hprof")")
check=$(cd "$(dirname "$0")/../.." && pwd)/../shared/tools/hprof-check/hprof-check.sh
if [ -x "$check" ]; then
  results+=("$(run visualvm-hprof "$check" "$dir/bench.hprof" --retained 5 --sample 1000000000 --no-prescan)")
fi
echo "heapview phases (dump):"; grep -v '^top\|^objects' "$dir/heapview-dump.out" || true
echo "heapview phases (hprof):"; grep -v '^top\|^objects' "$dir/heapview-hprof.out" || true
grep '^objects' "$dir/heapview-dump.out" | sed 's/^/dump:  /'
grep '^objects' "$dir/heapview-hprof.out" | sed 's/^/hprof: /'
printf '%-16s %9s %11s %13s\n' "" seconds "peak MiB" "bytes/object"
for r in "${results[@]}"; do
  read -r name secs rss <<< "$r"
  printf '%-16s %9.2f %11.1f %13.1f\n' "$name" "$secs" "$(echo "$rss / 1024" | bc -l)" \
    "$(echo "$rss * 1024 / $objects" | bc -l)"
done
if [ ${#results[@]} -eq 3 ]; then
  read -r _ hs hr <<< "${results[1]}"
  read -r _ vs vr <<< "${results[2]}"
  printf 'VisualVM / heapview on the same hprof: time %.1fx, peak RSS %.1fx\n' "$(echo "$vs / $hs" | bc -l)" \
    "$(echo "$vr / $hr" | bc -l)"
  grep -A6 '^biggest' "$dir/visualvm-hprof.out" || true
fi
grep '^top' "$dir/heapview-hprof.out" || true
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
