#!/usr/bin/env bash
# scripts/setup.sh [demo|test]: installs the Debian packages a command needs.
#   demo: what `make demo` builds and runs with (compiler, CMake, Boost,
#         libunwind, elfutils, zstd, zlib);
#   test: all of that, plus GTest, Google Benchmark, the interop readers
#         (VisualVM, Go, a JDK), the benchmarks' peers (gperftools, jemalloc,
#         mimalloc), the programs the preload tests run, and the one npm
#         package of the checks (`npm ci`). The default.
# As root it runs apt-get; otherwise it prints the exact command and stops, so
# nothing is half set up.
set -euo pipefail
set_name=${1:-test}

demo_packages=(
  cmake g++ make pkg-config binutils
  libboost-program-options-dev libboost-iostreams-dev libboost-dev
  libunwind-dev libdw-dev libzstd-dev zlib1g-dev
)
test_packages=(
  zstd gzip
  libgtest-dev libgmock-dev libbenchmark-dev
  # the libFuzzer targets (scripts/fuzz.sh): clang and its fuzzer runtime
  clang-14 libclang-rt-14-dev
  # interop judges: VisualVM's heap library, go tool pprof, a JDK for the harnesses,
  # curl for the /debug/pprof/ requests go tool pprof does not make, and the
  # headless browser that opens heapview's pages and speedscope's view of the
  # flight recorder's traces
  visualvm golang-go default-jdk-headless curl chromium
  # peers for the benchmarks and real programs for the preload tests
  libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev sqlite3 git python3 time
  # the typing pass's DWARF checks: an independent DWARF reader and a real
  # third-party library's parsed document; a stripped key-value store library holding data
  elfutils nlohmann-json3-dev libleveldb-dev
  # other libraries' containers the shape rule must not take for libstdc++'s, and
  # protobuf messages (tests/typing/typing_libraries.sh)
  libabsl-dev libprotobuf-dev protobuf-compiler libboost-container-dev
  # the stack of a hung process in the fork tests' failure reports; gcore for the
  # glibc heap walker's core test and the cores tests/coredump converts
  gdb
  # libc's symbols: the glibc walker's tests find main_arena by symbol as well as by structure
  libc6-dbg
)

case $set_name in
  demo) packages=("${demo_packages[@]}") ;;
  test) packages=("${demo_packages[@]}" "${test_packages[@]}")
        # npm comes with Node.js on the machines CI uses; Debian has it apart.
        command -v npm >/dev/null 2>&1 || packages+=(npm) ;;
  *) echo "usage: scripts/setup.sh [demo|test]" >&2; exit 2 ;;
esac

# The npm readers and drivers of the checks, each pinned by its
# package-lock.json and installed beside it: pprof-format, a second reader of
# the profiles; puppeteer-core, which drives chromium in heapview's browser
# test; speedscope, the flight recorder's trace viewer.
npm_packages() {
  [ "$set_name" = test ] || return 0
  local root d pkg d_pkg
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  for d_pkg in tests/pprof/pprof-format:pprof-format tests/heapview/browser:puppeteer-core \
               tests/flight_recorder/speedscope:speedscope; do
    d="$root/${d_pkg%%:*}" pkg="${d_pkg#*:}"
    [ -f "$d/node_modules/$pkg/package.json" ] && continue
    echo "setup: npm ci in $d"
    (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
  done
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  npm_packages
  exit 0
fi

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "libdump set-up ($set_name) needs these Debian packages; run as root:" >&2
  echo "  $cmd" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
npm_packages
