#!/usr/bin/env bash
# The main job, end to end: an example program writes a heap dump, readdump
# summarises and validates it, dumptohprof converts it to hprof.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
scripts/build.sh build
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
  build/tools/dumptohprof/dumptohprof "$dump" "$out/example.hprof"
  echo "hprof written to $out/example.hprof (open it in VisualVM, Eclipse MAT or jhat)"
fi
