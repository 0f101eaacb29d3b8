#!/bin/sh
# HeapCheck must pass the valid file make_broken_hprofs writes and fail each
# broken one with the PROBLEM line naming the rule it breaks.
#   broken_check.sh MAKE_BROKEN_HPROFS HEAP_CHECK_SH DUMPTOHPROF READDUMP WORKDIR
set -u
make=$1 check=$2 dumptohprof=$3 readdump=$4 work=$5
mkdir -p "$work"
"$make" "$work" > "$work/cases" || exit 1
failures=0 cases=0
while IFS="$(printf '\t')" read -r name problem; do
  cases=$((cases + 1))
  "$check" "$dumptohprof" "$readdump" "$work/$name.hprof" "$work" > "$work/$name.out" 2>&1
  rc=$?
  if [ -z "$problem" ]; then
    if [ $rc -ne 0 ] || ! grep -q '^RESULT: OK' "$work/$name.out"; then
      echo "FAIL $name: the valid file was rejected (exit $rc):"; grep -E '^(PROBLEM|RESULT)' "$work/$name.out"
      failures=$((failures + 1))
    fi
  elif [ $rc -eq 0 ] || ! grep '^PROBLEM' "$work/$name.out" | grep -qF "$problem"; then
    echo "FAIL $name: expected exit 1 and a PROBLEM line with \"$problem\"; got exit $rc:"
    grep -E '^(PROBLEM|RESULT)' "$work/$name.out"
    failures=$((failures + 1))
  else
    echo "ok $name: $(grep '^PROBLEM' "$work/$name.out" | grep -F "$problem" | head -1)"
  fi
done < "$work/cases"
echo "$cases cases, $failures failures"
[ "$cases" -gt 1 ] && [ $failures -eq 0 ]
