#!/usr/bin/env bash
# The main job, end to end: an example program writes a heap dump of its
# own C++ objects; readdump validates it and shows what holds the memory
# (the histogram by type, the top retainers, one path from a root);
# dumptohprof converts it; heapview serves it in a browser.
#   LIBDUMP_DEMO_SERVE=1 (or `make view`): heapview serves at the end, until Ctrl-C.
#   LIBDUMP_DEMO_OUT=DIR: where the dump and the hprof go (default out/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Each step's wall time, printed at the end: the demo's budget is 3 minutes
# on a fresh machine, apt included (README.md, "The demo's time").
steps=()
step_start=$SECONDS
step_done() { steps+=("$(printf '%-14s %5d s' "$1" $((SECONDS - step_start)))"); step_start=$SECONDS; }
scripts/setup.sh demo
step_done "set-up (apt)"
jobs=${LIBDUMP_JOBS:-$(nproc)}
if [ ! -f build/CMakeCache.txt ]; then
  # Only what the demo needs: no tests (GTest) nor benchmarks. `make test`
  # turns them on in the same tree.
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBDUMP_BUILD_TESTS=OFF -DLIBDUMP_BUILD_BENCH=OFF >/dev/null
fi
step_done "configure"
# Only the programs the demo runs: heapview (Boost.Beast, the slowest tool to
# compile) when it serves.
targets=(heap_dump_example readdump dumptohprof)
[ "${LIBDUMP_DEMO_SERVE:-0}" = 1 ] && targets+=(heapview)
echo "== building ${targets[*]}"
cmake --build build -j "$jobs" --target "${targets[@]}"
step_done "build"
out=${LIBDUMP_DEMO_OUT:-$root/out}
mkdir -p "$out"
dump=$out/example.dump
hprof=$out/example.hprof
readdump=build/tools/readdump/readdump
# Paths as a reader would type them from the repository's root.
show() { case $1 in "$root"/*) printf '%s' "${1#"$root"/}" ;; *) printf '%s' "$1" ;; esac; }

echo "== examples/heap_dump_example: a program that dumps its own heap"
build/examples/heap_dump_example "$dump" | tee "$out/example.txt"
payload=$(sed -n "s/.*payload is at //p" "$out/example.txt")
echo "== readdump $(show "$dump")"
$readdump "$dump"
echo "== readdump --validate"
$readdump --validate "$dump"
echo "== readdump --histogram --top 10: bytes by C++ type"
$readdump --histogram --top 10 "$dump"
echo "(untyped: plain malloc/new blocks of the C++ runtime and libraries, such as libstdc++'s 72 KiB"
echo " exception pool; the example's own objects are typed through libdump/typed.h or named by their vtables)"
echo "== readdump --dominators --top 5: what retains the most"
$readdump --dominators --top 5 "$dump"
echo "== readdump --path-to-root $payload: why one session's payload is still alive"
$readdump --path-to-root "$payload" "$dump"
echo "== dumptohprof"
# --force: a second `make demo` replaces the first one's hprof.
build/tools/dumptohprof/dumptohprof --force "$dump" "$hprof"
echo "hprof written to $(show "$hprof") (VisualVM and Eclipse MAT open it too)"
step_done "run"
echo "== heapview: browse the heap"
echo "  dumptohprof dump out.hprof && heapview out.hprof   # then open http://localhost:7000/"
echo "here:"
[ -x build/tools/heapview/heapview ] || echo "  cmake --build build --target heapview"
echo "  build/tools/heapview/heapview $(show "$hprof")   # then open http://localhost:7000/"
echo "  (or LIBDUMP_DEMO_SERVE=1 make demo, or make view)"
echo "== time by step"
printf '  %s\n' "${steps[@]}"
printf '  %-14s %5d s\n' total $SECONDS
if [ "${LIBDUMP_DEMO_SERVE:-0}" = 1 ]; then
  echo "== serving http://localhost:7000/ until Ctrl-C"
  exec build/tools/heapview/heapview "$hprof"
fi
