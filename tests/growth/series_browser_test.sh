#!/usr/bin/env bash
# heapview --series on the leaking growth_program's three dumps, read in
# Debian's headless chromium (tests/heapview/browser/series.mjs).
#   series_browser_test.sh GROWTH_PROGRAM HEAPVIEW WORKDIR
set -u
prog=$1 tool=$2 work=$3
browser=$(cd "$(dirname "$0")/../heapview/browser" && pwd)
rm -rf "$work" && mkdir -p "$work"
if [ ! -d "$browser/node_modules/puppeteer-core" ]; then
  echo "FAIL: puppeteer-core is not installed: run scripts/setup.sh (npm ci in $browser)"
  exit 1
fi
"$prog" leak "$work/leak" >/dev/null || { echo "FAIL: growth_program"; exit 1; }
"$tool" --port 0 -q --series "$work"/leak.{1,2,3} > "$work/server.out" 2> "$work/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
url=
for _ in $(seq 1 100); do
  url=$(sed -n 's/^heapview: serving \(http:[^ ]*\) .*/\1/p' "$work/server.out")
  [ -n "$url" ] && break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "FAIL: heapview did not start"; cat "$work/server.err"; exit 1
fi
node "$browser/series.mjs" "$url" "$work/series.png"
rc=$?
kill -INT $pid
wait $pid
exit $rc
