#!/usr/bin/env bash
# A Go runtime's heap dump against a libdump dump of the same content:
# readdump --histogram (reading) and dumptohprof (converting) on each, in
# interleaved rounds (Go, libdump, Go, libdump ...), CPU time (user+sys)
# medians and the Go/libdump ratio of each round's pair. The Go dump is
# written by tests/godump/producer.go (NODES 80-byte list nodes) with the
# installed Go; bench/godump/go_to_libdump rewrites its records as a libdump
# dump, so both files hold the same objects, payloads, types and roots.
# Files live in /dev/shm so the figures measure the code, not the disk.
# A third contender converts the Go dump with --binary (typed by the
# producer's DWARF), paired with the same round's untyped conversion of it.
# With valgrind installed it also counts instructions (callgrind) of one run
# of each on the same files: repeatable on a loaded machine where CPU time
# is not.
# Usage: bench/godump/run.sh [BUILD_DIR] [NODES] [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
nodes=${2:-2000000}
rounds=${3:-7}
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=/dev/shm/libdump-bench-godump.$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
command -v go >/dev/null || { echo "needs the Go toolchain (golang-go)" >&2; exit 2; }
(cd "$src/tests/godump" && GOCACHE="$dir/gocache" GOFLAGS=-mod=mod go build -o "$dir/producer" producer.go)
go_dump=$dir/go.heapdump
lib_dump=$dir/libdump.dump
"$dir/producer" "$go_dump" "$nodes" 3 2
"$build/bench/godump/go_to_libdump" "$go_dump" "$lib_dump"
readdump=$build/tools/readdump/readdump
dumptohprof=$build/tools/dumptohprof/dumptohprof
objects() { "$readdump" "$1" | sed -n 's/^objects: \([0-9]*\) .*/\1/p'; }
[ "$(objects "$go_dump")" = "$(objects "$lib_dump")" ] || { echo "object counts differ" >&2; exit 1; }

# CPU seconds (user+sys) and peak RSS of one run.
cpu() {
  /usr/bin/time -f '%U %S %M' -o "$dir/time" "$@" >/dev/null
  read -r u s rss < "$dir/time"
  echo "$(echo "$u + $s" | bc -l) $rss"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -A t rss ratio
for _ in $(seq "$rounds"); do
  for op in read convert; do
    for d in go lib; do
      f=$go_dump; [ "$d" = lib ] && f=$lib_dump
      rm -f "$dir/out.hprof"
      if [ "$op" = read ]; then
        set -- $(cpu "$readdump" --histogram "$f")
      else
        set -- $(cpu "$dumptohprof" -q "$f" "$dir/out.hprof")
      fi
      t[$op.$d]+="$1 "; rss[$op.$d]=$2
      [ "$d" = go ] && last=$1
    done
    ratio[$op]+="$(echo "$last / $1" | bc -l) "
    if [ "$op" = convert ]; then  # typed against this round's untyped conversion of the Go dump
      rm -f "$dir/out.hprof"
      set -- $(cpu "$dumptohprof" -q --binary "$dir/producer" "$go_dump" "$dir/out.hprof")
      t[typed]+="$1 "; rss[typed]=$2
      ratio[typed]+="$(echo "$1 / $last" | bc -l) "
    fi
  done
done

printf 'Go dump %.1f MB, libdump dump %.1f MB, %s objects each (%s nodes); %s rounds\n' \
  "$(echo "$(stat -c %s "$go_dump") / 1000000" | bc -l)" "$(echo "$(stat -c %s "$lib_dump") / 1000000" | bc -l)" \
  "$(objects "$go_dump")" "$nodes" "$rounds"
printf '%-22s %12s %12s %14s %16s\n' "CPU s (median)" "Go dump" "libdump" "Go / libdump" "peak RSS MiB Go/lib"
for op in read convert; do
  name="readdump --histogram"; [ "$op" = convert ] && name="dumptohprof"
  # shellcheck disable=SC2086
  printf '%-22s %12.3f %12.3f %14.2f %9.0f / %.0f\n' "$name" "$(median ${t[$op.go]})" "$(median ${t[$op.lib]})" \
    "$(median ${ratio[$op]})" "$(echo "${rss[$op.go]} / 1024" | bc -l)" "$(echo "${rss[$op.lib]} / 1024" | bc -l)"
done
# shellcheck disable=SC2086
printf '%-22s %12.3f %12s %14s %9.0f MiB; --binary / untyped %.2f\n' "dumptohprof --binary" "$(median ${t[typed]})" "" "" \
  "$(echo "${rss[typed]} / 1024" | bc -l)" "$(median ${ratio[typed]})"
rm -f "$dir/out.hprof"
"$dumptohprof" --binary "$dir/producer" "$go_dump" "$dir/out.hprof" | grep '^Go types'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

command -v valgrind >/dev/null || exit 0
instr() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
    sed -n 's/.*I *refs: *//p' | tr -d ,
}
printf '%-22s %14s %14s %14s\n' "instructions" "Go dump" "libdump" "Go / libdump"
for op in read convert; do
  if [ "$op" = read ]; then
    name="readdump --histogram"
    g=$(instr "$readdump" --histogram "$go_dump"); l=$(instr "$readdump" --histogram "$lib_dump")
  else
    name="dumptohprof"
    rm -f "$dir/out.hprof"; g=$(instr "$dumptohprof" -q "$go_dump" "$dir/out.hprof")
    rm -f "$dir/out.hprof"; l=$(instr "$dumptohprof" -q "$lib_dump" "$dir/out.hprof")
  fi
  printf '%-22s %14s %14s %14.2f\n' "$name" "$g" "$l" "$(echo "$g / $l" | bc -l)"
done
rm -f "$dir/out.hprof"; b=$(instr "$dumptohprof" -q --binary "$dir/producer" "$go_dump" "$dir/out.hprof")
printf '%-22s %14s %14s %14s; --binary / untyped %.2f\n' "dumptohprof --binary" "$b" "" "" "$(echo "$b / $g" | bc -l)"
