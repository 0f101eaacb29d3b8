#!/usr/bin/env bash
# Writer and reader throughput on a generated ~1 GiB dump, uncompressed and
# zstd -1, side by side with the limits: `cat` for reading and copying,
# `zstd -d` for decompression. Files live in /dev/shm (memory) so the figures
# measure the code, not this machine's virtual disk; pass DIR to use a disk.
# Usage: bench/format/run.sh [BUILD_DIR] [MiB] [DIR]
set -euo pipefail
build=${1:-build}
mb=${2:-1024}
dir=${3:-/dev/shm/libdump-bench-format}
bin=$build/bench/format/format_throughput
mkdir -p "$dir"
raw=$dir/bench.dump
zst=$dir/bench.dump.zst
trap 'rm -rf "$dir"' EXIT

secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
rate() { echo "$1 / $2 / 1000000000" | bc -l | cut -c1-5; }
ratio() { echo "$1 / $2" | bc -l | cut -c1-5; }

echo "== writer"
"$bin" write /dev/null --mb "$mb"
"$bin" write "$raw" --mb "$mb"
"$bin" write "$zst" --mb "$mb" --zstd
size=$(stat -c %s "$raw")
w_ours=$(secs "$bin" write "$raw" --mb "$mb")
w_cat=$(secs sh -c "cat '$raw' > '$dir/copy'")
rm -f "$dir/copy"
echo "== reader"
"$bin" read "$raw"
"$bin" read "$zst"
r_ours=$(secs "$bin" read "$raw")
r_cat=$(secs cat "$raw")
z_ours=$(secs "$bin" read "$zst")
z_zstd=$(secs zstd -q -d -c "$zst")
echo
printf '%-34s %8s %8s  %s\n' "whole command, $((size >> 20)) MiB dump" "seconds" "GB/s" "ratio"
printf '%-34s %8.3f %8s  %sx cat\n' "format_throughput write (raw)" "$w_ours" "$(rate "$size" "$w_ours")" "$(ratio "$w_ours" "$w_cat")"
printf '%-34s %8.3f %8s\n' "cat DUMP > COPY" "$w_cat" "$(rate "$size" "$w_cat")"
printf '%-34s %8.3f %8s  %sx cat\n' "format_throughput read (raw)" "$r_ours" "$(rate "$size" "$r_ours")" "$(ratio "$r_ours" "$r_cat")"
printf '%-34s %8.3f %8s\n' "cat DUMP >/dev/null" "$r_cat" "$(rate "$size" "$r_cat")"
printf '%-34s %8.3f %8s  %sx zstd -d\n' "format_throughput read (zstd -1)" "$z_ours" "$(rate "$size" "$z_ours")" "$(ratio "$z_ours" "$z_zstd")"
printf '%-34s %8.3f %8s\n' "zstd -d -c DUMP.zst >/dev/null" "$z_zstd" "$(rate "$size" "$z_zstd")"
