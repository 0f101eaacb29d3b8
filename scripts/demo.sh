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
build/examples/sample_dump "$out/sample.dump"
build/tools/readdump/readdump "$out/sample.dump"
build/tools/readdump/readdump --validate "$out/sample.dump"
build/tools/readdump/readdump --histogram --top 10 "$out/sample.dump"
if [ -x build/tools/dumptohprof/dumptohprof ]; then
  build/tools/dumptohprof/dumptohprof "$out/sample.dump" "$out/sample.hprof"
  echo "hprof written to $out/sample.hprof (open it in VisualVM, Eclipse MAT or jhat)"
fi
