#!/bin/sh
# Regenerates testdata/*.dump. usage: testdata/gen/make_testdata.sh [BUILD_DIR]
# The expected outputs are not regenerated: after a change here, check the new
# readdump output by hand (testdata/README.md) before updating any *.expected.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
cmake --build "$build" --target make_testdata
"$build/tools/readdump/testdata_gen/make_testdata" "$src/testdata"
# -n: no name or timestamp in the header, so the bytes are reproducible.
gzip -n -9 -c "$src/testdata/full.dump" > "$src/testdata/full.dump.gz"
cmake --build "$build" --target make_go_fixtures
"$build/tools/readdump/testdata_gen/make_go_fixtures" "$src/testdata"
