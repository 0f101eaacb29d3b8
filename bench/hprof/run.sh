#!/usr/bin/env bash
# dumptohprof throughput and peak memory on a generated dump (default 1e7
# objects, ~1 GB), next to `cat DUMP >/dev/null`, the I/O limit. Files live
# in /dev/shm so the figures measure the converter, not the disk; pass DIR to
# use a disk. The dump is converted twice (the first run warms the page cache).
# Usage: bench/hprof/run.sh [BUILD_DIR] [OBJECTS] [DIR]
set -euo pipefail
build=${1:-build}
objects=${2:-10000000}
dir=${3:-/dev/shm/libdump-bench-hprof}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
dump=$dir/bench.dump
"$build/bench/hprof/make_bench_dump" "$dump" --objects "$objects"
size=$(stat -c %s "$dump")

secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
cat "$dump" >/dev/null
t_cat=$(secs cat "$dump")
"$build/tools/dumptohprof/dumptohprof" -q "$dump" "$dir/out.hprof"
# Replacing the old output would time the kernel freeing 1 GB of it (rename).
rm -f "$dir/out.hprof"
/usr/bin/time -f '%e %M %U %S' -o "$dir/time" "$build/tools/dumptohprof/dumptohprof" -q "$dump" "$dir/out.hprof"
read -r t_conv rss_kb t_user t_sys < "$dir/time"
hsize=$(stat -c %s "$dir/out.hprof")

printf 'dump: %d objects, %.1f MB; hprof %.1f MB\n' "$objects" "$(echo "$size / 1000000" | bc -l)" \
  "$(echo "$hsize / 1000000" | bc -l)"
printf '%-28s %8s %10s %12s\n' "" "seconds" "MB/s" "time / cat"
printf '%-28s %8.2f %10.0f %12.1f\n' "cat DUMP >/dev/null" "$t_cat" "$(echo "$size / $t_cat / 1000000" | bc -l)" 1
printf '%-28s %8.2f %10.0f %12.1f\n' "dumptohprof DUMP OUT" "$t_conv" "$(echo "$size / $t_conv / 1000000" | bc -l)" \
  "$(echo "$t_conv / $t_cat" | bc -l)"
t_cpu=$(echo "$t_user + $t_sys" | bc -l)
printf '%-28s %8.2f %10.0f  (user %s + sys %s; wall time counts other load)\n' "dumptohprof, CPU time" "$t_cpu" \
  "$(echo "$size / $t_cpu / 1000000" | bc -l)" "$t_user" "$t_sys"
printf 'peak RSS %.1f MB = %.1f bytes per object\n' "$(echo "$rss_kb / 1024" | bc -l)" \
  "$(echo "$rss_kb * 1024 / $objects" | bc -l)"
