#!/usr/bin/env bash
# dumptohprof throughput and peak memory on a generated dump (default 1e7
# objects, ~1 GB), next to `cat DUMP >/dev/null`, the I/O limit. Files live
# in /dev/shm so the figures measure the converter, not the disk; pass DIR to
# use a disk. A first conversion warms the page cache; then the best of three.
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
min() { printf '%s\n' "$@" | sort -g | head -1; }
cat "$dump" >/dev/null
"$build/tools/dumptohprof/dumptohprof" -q --force "$dump" "$dir/out.hprof"
# Best of three, cat and converter side by side: on a shared machine the
# fastest run is the one least disturbed by others.
cats=() convs=() cpus=() users=() syss=() rss_kb=0
for _ in 1 2 3; do
  cats+=("$(secs cat "$dump")")
  # Replacing the old output would time the kernel freeing 1 GB of it (rename).
  rm -f "$dir/out.hprof"
  /usr/bin/time -f '%e %M %U %S' -o "$dir/time" "$build/tools/dumptohprof/dumptohprof" -q "$dump" "$dir/out.hprof"
  read -r t rss u s < "$dir/time"
  convs+=("$t") users+=("$u") syss+=("$s") cpus+=("$(echo "$u + $s" | bc -l)")
  [ "$rss" -gt "$rss_kb" ] && rss_kb=$rss
done
t_cat=$(min "${cats[@]}") t_conv=$(min "${convs[@]}") t_cpu=$(min "${cpus[@]}")
t_user=$(min "${users[@]}") t_sys=$(min "${syss[@]}")
hsize=$(stat -c %s "$dir/out.hprof")

printf 'dump: %d objects, %.1f MB; hprof %.1f MB\n' "$objects" "$(echo "$size / 1000000" | bc -l)" \
  "$(echo "$hsize / 1000000" | bc -l)"
printf '%-28s %8s %10s %12s\n' "" "seconds" "MB/s" "time / cat"
printf '%-28s %8.2f %10.0f %12.1f\n' "cat DUMP >/dev/null" "$t_cat" "$(echo "$size / $t_cat / 1000000" | bc -l)" 1
printf '%-28s %8.2f %10.0f %12.1f\n' "dumptohprof DUMP OUT" "$t_conv" "$(echo "$size / $t_conv / 1000000" | bc -l)" \
  "$(echo "$t_conv / $t_cat" | bc -l)"
printf '%-28s %8.2f %10.0f  (least user %s, least sys %s; wall time counts other load)\n' "dumptohprof, CPU time" \
  "$t_cpu" "$(echo "$size / $t_cpu / 1000000" | bc -l)" "$t_user" "$t_sys"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'peak RSS %.1f MiB = %.1f bytes per object\n' "$(echo "$rss_kb / 1024" | bc -l)" \
  "$(echo "$rss_kb * 1024 / $objects" | bc -l)"
