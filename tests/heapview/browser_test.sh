#!/bin/bash
# heapview in Debian's headless chromium (puppeteer-core pinned by
# tests/heapview/browser/package-lock.json, installed by scripts/setup.sh with
# npm ci): serves the files on a free port, then runs one page check of
# tests/heapview/browser/ against it (check.mjs unless CHECK names another).
#   browser_test.sh HEAPVIEW WORKDIR [CHECK.mjs] -- HEAPVIEW_ARGS...
#   browser_test.sh HEAPVIEW GRAPH.dump WORKDIR          (check.mjs on GRAPH.dump)
set -u
tool=$1
if [ $# -eq 3 ]; then
  work=$3 check=check.mjs
  set -- "$2"
else
  work=$2 check=check.mjs
  shift 2
  [ "$1" != -- ] && { check=$1; shift; }
  shift  # --
fi
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rm -rf "$work" && mkdir -p "$work"
need_puppeteer
"$tool" --port 0 -q "$@" > "$work/server.out" 2> "$work/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
wait_for "$work/server.out" '^heapview: serving http:' 10
url=$(sed -n 's/^heapview: serving \(http:[^ ]*\) .*/\1/p' "$work/server.out")
if [ -z "$url" ]; then
  echo "FAIL: heapview did not start"; cat "$work/server.err"; kill $pid; exit 1
fi
node "$here/browser/$check" "$url" "$work/${check%.mjs}.png"
rc=$?
kill -INT $pid
wait $pid
exit $rc
