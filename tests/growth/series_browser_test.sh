#!/usr/bin/env bash
# heapview --series on the leaking growth_program's three dumps, read in
# Debian's headless chromium (tests/heapview/browser/series.mjs).
#   series_browser_test.sh GROWTH_PROGRAM HEAPVIEW WORKDIR
set -u
prog=$1 tool=$2 work=$3
mkdir -p "$work.dumps"
"$prog" leak "$work.dumps/leak" >/dev/null || { echo "FAIL: growth_program"; exit 1; }
exec bash "$(dirname "$0")/../heapview/browser_test.sh" "$tool" "$work" series.mjs -- \
  --series "$work.dumps"/leak.{1,2,3}
