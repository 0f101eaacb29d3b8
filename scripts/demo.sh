#!/usr/bin/env bash
# The main job, end to end: an example program writes a heap dump, readdump
# summarises and validates it, dumptohprof converts it to hprof.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh demo
jobs=${LIBDUMP_JOBS:-$(nproc)}
if [ ! -f build/CMakeCache.txt ]; then
  # Only what the demo needs: no tests (GTest) nor benchmarks. `make test`
  # turns them on in the same tree.
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBDUMP_BUILD_TESTS=OFF -DLIBDUMP_BUILD_BENCH=OFF >/dev/null
fi
cmake --build build -j "$jobs" --target heap_dump_example readdump dumptohprof
out=${LIBDUMP_DEMO_OUT:-$root/out}
mkdir -p "$out"
dump=$out/example.dump
echo "== examples/heap_dump_example: a program that dumps its own heap"
build/examples/heap_dump_example "$dump"
echo "== readdump"
build/tools/readdump/readdump "$dump"
echo "== readdump --validate"
build/tools/readdump/readdump --validate "$dump"
echo "== readdump --histogram --top 10"
build/tools/readdump/readdump --histogram --top 10 "$dump"
echo "== readdump --threads"
build/tools/readdump/readdump --threads "$dump"
if [ -x build/tools/dumptohprof/dumptohprof ]; then
  echo "== dumptohprof"
  # --force: a second `make demo` replaces the first one's hprof.
  build/tools/dumptohprof/dumptohprof --force "$dump" "$out/example.hprof"
  echo "hprof written to $out/example.hprof (open it in VisualVM, Eclipse MAT or jhat)"
fi
if [ -x build/tools/heapview/heapview ]; then
  echo "== readdump --dominators --top 5"
  build/tools/readdump/readdump --dominators --top 5 "$dump"
  # Serving is opt-in so the demo ends: LIBDUMP_DEMO_SERVE=1 serves until Ctrl-C.
  echo "== heapview: build/tools/heapview/heapview $out/example.hprof serves http://127.0.0.1:7000/"
  if [ "${LIBDUMP_DEMO_SERVE:-0}" = 1 ]; then build/tools/heapview/heapview "$out/example.hprof"; fi
fi
