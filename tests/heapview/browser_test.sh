#!/bin/bash
# heapview in Debian's headless chromium (tests/heapview/browser/check.mjs,
# puppeteer-core pinned by its package-lock.json, installed by
# scripts/setup.sh with npm ci).
#   browser_test.sh HEAPVIEW GRAPH.dump WORKDIR
set -u
tool=$1 dump=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
if [ ! -d "$here/browser/node_modules/puppeteer-core" ]; then
  echo "FAIL: puppeteer-core is not installed: run scripts/setup.sh (npm ci in $here/browser)"
  exit 1
fi
"$tool" --port 0 -q "$dump" > "$work/server.out" 2> "$work/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
url=
for _ in $(seq 1 100); do
  url=$(sed -n 's/^heapview: serving \(http:[^ ]*\) .*/\1/p' "$work/server.out")
  [ -n "$url" ] && break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "FAIL: heapview did not start"; cat "$work/server.err"; kill $pid; exit 1
fi
node "$here/browser/check.mjs" "$url" "$work/histogram.png"
rc=$?
kill -INT $pid
wait $pid
exit $rc
