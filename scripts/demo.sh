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
echo "== dumptohprof"
# --force: a second `make demo` replaces the first one's hprof.
build/tools/dumptohprof/dumptohprof --force "$dump" "$out/example.hprof"
echo "hprof written to $out/example.hprof (open it in VisualVM, Eclipse MAT or jhat)"
