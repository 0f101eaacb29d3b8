# Sourced by the coredump tests after `set -euo pipefail`: BINDIR PROGRAM
# from the arguments, the tools, a scratch directory; on exit the test's
# background jobs still running are killed. KEEP=1 keeps the directory.
bindir=$(cd "$1" && pwd)
program=$2
here=$(cd "$(dirname "$0")" && pwd)
coretodump=$bindir/tools/coretodump/coretodump
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
cleanup() {
  local p
  for p in $(jobs -p); do kill -9 "$p" 2> /dev/null && wait "$p" 2> /dev/null; done
  if [ -n "${KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# wait_for FILE: until it exists (at most 60 s).
wait_for() {
  for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done
  fail "$1 did not appear"
}
