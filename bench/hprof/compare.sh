#!/usr/bin/env bash
# bench/hprof/compare.sh: two dumptohprof binaries on one generated dump,
# interleaved A B A B ..., CPU time (user+sys) of each run and the B/A ratio
# pair by pair, medians at the end. CPU time and pairing, not wall time,
# because the machine is shared: a burst of load hits both runs of a pair.
# Usage: bench/hprof/compare.sh A_DUMPTOHPROF B_DUMPTOHPROF [BUILD_DIR] [OBJECTS] [PAIRS] [DIR]
set -euo pipefail
a=$1 b=$2
build=${3:-build}
objects=${4:-1000000}
pairs=${5:-7}
dir=${6:-/dev/shm/libdump-bench-hprof-ab}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
dump=$dir/bench.dump
"$build/bench/hprof/make_bench_dump" "$dump" --objects "$objects"
cpu() {  # user+sys seconds of one conversion into a fresh file
  rm -f "$dir/out.hprof"
  /usr/bin/time -f '%U %S' -o "$dir/time" "$1" -q "$dump" "$dir/out.hprof"
  read -r u s < "$dir/time"
  echo "$u + $s" | bc -l
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
cpu "$a" >/dev/null; cpu "$b" >/dev/null  # warm the page cache and both binaries
rm -f "$dir/a.hprof" "$dir/b.hprof"; "$a" -q "$dump" "$dir/a.hprof"; "$b" -q "$dump" "$dir/b.hprof"
if cmp -s "$dir/a.hprof" "$dir/b.hprof"; then same="byte-identical"; else same="DIFFERENT"; fi
as=() bs=() rs=()
printf '%-6s %8s %8s %8s\n' pair "A cpu s" "B cpu s" "B/A"
for i in $(seq "$pairs"); do
  ta=$(cpu "$a"); tb=$(cpu "$b")
  r=$(echo "$tb / $ta" | bc -l)
  as+=("$ta") bs+=("$tb") rs+=("$r")
  printf '%-6s %8.2f %8.2f %8.3f\n' "$i" "$ta" "$tb" "$r"
done
printf 'median %8.2f %8.2f %8.3f   (%d objects, %.0f MB dump; outputs %s; load %s)\n' \
  "$(median "${as[@]}")" "$(median "${bs[@]}")" "$(median "${rs[@]}")" "$objects" \
  "$(echo "$(stat -c %s "$dump") / 1000000" | bc -l)" "$same" "$(cut -d' ' -f1-3 /proc/loadavg)"
