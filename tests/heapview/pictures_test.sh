#!/bin/bash
# heapview's pictures in headless chromium (browser/pictures.mjs) on the test
# dump, with readdump --dominators' figures and its folded stacks opened in
# speedscope, then on N objects in lists of 1 to 97 objects, each held by
# its own root (a large heap: the summary aggregates the smaller retainers).
#   pictures_test.sh HEAPVIEW READDUMP MAKE_DUMP WORKDIR N
set -u
heapview=$1 readdump=$2 make_dump=$3 work=$4 n=$5
here=$(cd "$(dirname "$0")" && pwd)
speedscope=$here/../flight_recorder/speedscope/node_modules/speedscope/dist/release/index.html
rm -rf "$work" && mkdir -p "$work"
if [ ! -f "$speedscope" ]; then
  echo "FAIL: speedscope is not installed: run scripts/setup.sh (npm ci in tests/flight_recorder/speedscope)"
  exit 1
fi
rc=0
"$make_dump" "$work/graph.dump" || exit 1
"$readdump" --dominators --json --no-index-cache "$work/graph.dump" > "$work/dominators.json" || exit 1
"$readdump" --dominators --flame --no-index-cache -o "$work/heap.folded" "$work/graph.dump" || exit 1
DOMINATORS=$work/dominators.json FOLDED=$work/heap.folded SPEEDSCOPE=$speedscope \
  bash "$here/browser_test.sh" "$heapview" "$work/example" pictures.mjs -- --no-index-cache "$work/graph.dump" || rc=1

# readdump's --flame: usage errors, and an existing -o FILE kept.
"$readdump" --flame "$work/graph.dump" 2> /dev/null; [ $? = 2 ] || { echo "FAIL: --flame without --dominators is not a usage error"; rc=1; }
"$readdump" --dominators --flame --no-index-cache -o "$work/heap.folded" "$work/graph.dump" 2> "$work/refused"
[ $? = 1 ] && grep -q 'already exists' "$work/refused" && [ -s "$work/heap.folded" ] ||
  { echo "FAIL: -o replaced an existing file without --force"; rc=1; }

start=$(date +%s.%N)
"$make_dump" "$work/big.dump" --forest "$n" || exit 1
"$readdump" --dominators --json --no-index-cache "$work/big.dump" > "$work/big.json" || exit 1
top=$(( $("$readdump" --dominators "$work/big.dump" | wc -l) - 2 ))
echo "forest of $n: dump and readdump --dominators in $(echo "$(date +%s.%N) - $start" | bc) s"
DOMINATORS=$work/big.json TOP_RETAINERS=$top bash "$here/browser_test.sh" "$heapview" "$work/big" pictures.mjs -- --no-index-cache \
  "$work/big.dump" || rc=1
exit $rc
