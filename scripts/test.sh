#!/usr/bin/env bash
# The whole test suite: a normal build, then the same suite under
# ASan+UBSan, then the runtime's concurrency tests under TSan.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh test
jobs=${LIBDUMP_JOBS:-$(nproc)}
# Each stage's wall time, so the suite's budget (60 minutes) is measured.
stage_start=0
stage_done() { echo "== $1: $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }
stage_done "set-up"

echo "== build without tests"
# Everything a tree configured without tests builds (the benchmarks
# included), so that code outside tests/ and */testing/ that reaches into
# them fails here. The same tree then gets the tests: nothing is compiled
# twice, the cost is one configure and a few links (README.md, "Builds").
scripts/build.sh build -DLIBDUMP_BUILD_TESTS=OFF -DLIBDUMP_BUILD_BENCH=ON
stage_done "build without tests"

echo "== build + tests"
# The tree `make demo` configured without tests and benchmarks gets them back.
scripts/build.sh build -DLIBDUMP_BUILD_TESTS=ON -DLIBDUMP_BUILD_BENCH=ON
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600
stage_done "build + tests"

echo "== ASan + UBSan"
# The sanitizer trees build at -O1 with line tables only (-g1): what a
# report needs, and a third of the compile time of -O2 -g under
# instrumentation (samplers/http/debug_server.cc: 65 s -> 22 s). Programs
# whose DWARF types a test reads ask for -g themselves.
sanitizer_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
scripts/build.sh build-asan -DLIBDUMP_SANITIZE=address,undefined -DLIBDUMP_BUILD_BENCH=OFF "${sanitizer_flags[@]}"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 900 -LE no_asan
stage_done "ASan + UBSan"

echo "== TSan (tests labelled tsan: the runtime's concurrency)"
if [ ! -f build-tsan/CMakeCache.txt ]; then
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBDUMP_SANITIZE=thread -DLIBDUMP_BUILD_BENCH=OFF \
    "${sanitizer_flags[@]}" >/dev/null
fi
cmake --build build-tsan -j "$jobs" --target tsan_tests
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -j "$jobs" --timeout 900 -L tsan
stage_done "TSan"
echo "== fuzz smoke (libFuzzer, every library instrumented, 20 s per target)"
scripts/fuzz.sh 20
stage_done "fuzz smoke"
echo "== all tests passed"
