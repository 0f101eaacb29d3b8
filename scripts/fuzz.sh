#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, every library instrumented
# (-fsanitize=fuzzer-no-link, ASan, UBSan; -O1 with line tables, as the
# sanitizer trees of scripts/test.sh), and runs each for SECONDS from a
# corpus seeded with testdata/'s dumps; prints executions, coverage and
# whether it found anything. Crash inputs are kept in build-fuzz/crashes/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    (default 25 s each, every target)
# CI runs it bounded (scripts/test.sh); docs/FUZZING.md gives the long run.
# Targets run side by side, as many at once as LIBDUMP_JOBS (default: cores).
# LIBDUMP_FUZZ_TIMEOUT (s, default 10): one input slower than this is a
# finding; raise it on a loaded machine, where a niced run starves.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-25}
shift || true
jobs=${LIBDUMP_JOBS:-$(nproc)}
build=build-fuzz
if [ ! -f $build/CMakeCache.txt ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B $build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBDUMP_FUZZ=ON \
    -DLIBDUMP_SANITIZE=address,undefined -DLIBDUMP_BUILD_TESTS=OFF -DLIBDUMP_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" > /dev/null
fi
# One build at a time: the long run starts one of these per target at once.
flock "$build/.build.lock" cmake --build $build -j "$jobs" --target fuzz_targets > /dev/null
# Each target: its binary and the seeds of its corpus (testdata/'s libdump
# dumps, fuzz/seeds/'s small Go dumps, hprofs and LIBDUMP_* values). Go dumps
# go to every dump pipeline: the reader detects them, so validate, the text
# and JSON sections and the converter all read them.
# fuzz/seeds/regress keeps what the fuzzers found.
dumps="testdata/*.dump testdata/*.dump.gz testdata/*.dump.zst fuzz/seeds/regress/*"
declare -A path=(
  [format_reader_fuzz]=$build/fuzz/format_reader_fuzz
  [go_dump_fuzz]=$build/fuzz/format_reader_fuzz
  [hprof_reader_fuzz]=$build/fuzz/hprof_reader_fuzz
  [readdump_validate_fuzz]=$build/fuzz/readdump_validate_fuzz
  [readdump_histogram_fuzz]=$build/fuzz/readdump_histogram_fuzz
  [readdump_json_fuzz]=$build/fuzz/readdump_json_fuzz
  [dumptohprof_fuzz]=$build/fuzz/dumptohprof_fuzz
  [agreement_fuzz]=$build/fuzz/agreement_fuzz
  [heapgraph_fuzz]=$build/fuzz/heapgraph_fuzz
  [go_typing_fuzz]=$build/fuzz/go_typing_fuzz
  [cxx_dwarf_fuzz]=$build/fuzz/cxx_dwarf_fuzz
  [typing_fuzz]=$build/fuzz/typing_fuzz
  [env_var_fuzz]=$build/fuzz/env_var_fuzz
  [allocator_fuzz]=$build/fuzz/allocator_fuzz
  [glibc_walker_fuzz]=$build/fuzz/glibc_walker_fuzz
  [core_image_fuzz]=$build/fuzz/core_image_fuzz
)
declare -A seeds=(
  [format_reader_fuzz]="$dumps"
  [go_dump_fuzz]="fuzz/seeds/go/*"
  [hprof_reader_fuzz]="fuzz/seeds/hprof/*"
  [readdump_validate_fuzz]="$dumps fuzz/seeds/go/*"
  [readdump_histogram_fuzz]="$dumps fuzz/seeds/go/*"
  [readdump_json_fuzz]="$dumps fuzz/seeds/go/*"
  [dumptohprof_fuzz]="$dumps fuzz/seeds/go/*"
  [agreement_fuzz]="$dumps fuzz/seeds/go/*"
  [heapgraph_fuzz]="$dumps fuzz/seeds/go/* fuzz/seeds/hprof/*"
  [go_typing_fuzz]="fuzz/seeds/gotyping/* fuzz/seeds/go/*"
  [typing_fuzz]="fuzz/seeds/typing/* $dumps fuzz/seeds/go/*"
  [cxx_dwarf_fuzz]="fuzz/seeds/cxxdwarf/*"
  [env_var_fuzz]="fuzz/seeds/env/*"
  [allocator_fuzz]="fuzz/seeds/alloc/*"
  [glibc_walker_fuzz]="fuzz/seeds/glibcheap/*"
  [core_image_fuzz]="fuzz/seeds/core/*"
)
all=(format_reader_fuzz go_dump_fuzz hprof_reader_fuzz readdump_validate_fuzz readdump_histogram_fuzz
     readdump_json_fuzz dumptohprof_fuzz agreement_fuzz go_typing_fuzz cxx_dwarf_fuzz heapgraph_fuzz typing_fuzz env_var_fuzz
     allocator_fuzz core_image_fuzz glibc_walker_fuzz)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -n "${path[$t]:-}" ] || { echo "fuzz.sh: unknown target $t (targets: ${all[*]})" >&2; exit 2; }
done
mkdir -p $build/crashes
# One target: its result line in $build/$t.result (0 or 1 on its first line).
run_one() {
  local t=$1 corpus=$build/corpus/$1 log=$build/$1.log
  if [ ! -d "$corpus" ]; then
    mkdir -p "$corpus"
    for f in ${seeds[$t]}; do cp "$f" "$corpus/"; done
  fi
  # -rss_limit_mb/-malloc_limit_mb: a giant allocation is a finding, not a slow run.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "${path[$t]}" "$corpus" -max_total_time="$seconds" -timeout="${LIBDUMP_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -max_len=65536 -artifact_prefix=$build/crashes/$t- -print_final_stats=1 > "$log" 2>&1; then
    { echo 1; echo "FAIL $t: see $log"; grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5 || true; } > $build/$t.result
    return
  fi
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/edges \1, features \2/p' || true)
  { echo 0; echo "ok   $t: $runs executions in ${seconds}s, $cov, corpus $(ls "$corpus" | wc -l) inputs"; } > $build/$t.result
}
# A libFuzzer run is one thread: as many at once as there are cores, so the
# bounded run takes SECONDS x targets / cores.
running=0
for t in "${targets[@]}"; do
  rm -f $build/$t.result
  if [ $running -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  run_one "$t" &
  running=$((running + 1))
done
wait || true
status=0
for t in "${targets[@]}"; do
  if [ ! -f $build/$t.result ]; then echo "FAIL $t: no result"; status=1; continue; fi
  [ "$(head -1 $build/$t.result)" = 0 ] || status=1
  tail -n +2 $build/$t.result
done
exit $status
