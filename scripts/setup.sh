#!/usr/bin/env bash
# Installs the Debian packages libdump needs to build, test and run its
# interop checks, then the one npm package of those checks. As root it runs
# apt-get; otherwise it prints the exact command and stops, so nothing is
# half set up.
set -euo pipefail

packages=(
  # build
  cmake g++ make pkg-config binutils
  libboost-program-options-dev libboost-iostreams-dev libboost-dev
  libunwind-dev libdw-dev libzstd-dev zlib1g-dev zstd gzip
  libgtest-dev libgmock-dev libbenchmark-dev
  # interop judges: VisualVM's heap library, go tool pprof, a JDK for the harnesses
  visualvm golang-go default-jdk-headless
  # peers for the benchmarks and real programs for the preload tests
  libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev sqlite3 git python3 time
  # the flight recorder's traces, opened by speedscope's page in headless Chromium
  chromium
)

# npm comes with Node.js on the machines CI uses; Debian has it apart.
command -v npm >/dev/null 2>&1 || packages+=(npm)

# The npm readers of the checks, each pinned by its package-lock.json and
# installed beside it: pprof-format (tests/pprof/pprof-format), a second
# reader of the profiles, and speedscope (tests/flight_recorder/speedscope),
# the flight recorder's trace viewer.
npm_packages() {
  local root d
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  for d in "$root/tests/pprof/pprof-format:pprof-format" "$root/tests/flight_recorder/speedscope:speedscope"; do
    [ -f "${d%%:*}/node_modules/${d##*:}/package.json" ] && continue
    echo "setup: npm ci in ${d%%:*}"
    (cd "${d%%:*}" && npm ci --no-audit --no-fund --loglevel=error)
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
  echo "libdump set-up needs these Debian packages; run as root:" >&2
  echo "  $cmd" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
npm_packages
