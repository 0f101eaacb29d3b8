#!/bin/bash
# --memory end to end: readdump's analysis verbs print the same under a 1 MiB
# budget (the graph's arrays in files, pages dropped) as in RAM, and a size
# that is not one is a usage error in both tools.
#   memory_test.sh HEAPVIEW READDUMP MAKE_HEAPVIEW_DUMP WORKDIR
set -u
heapview=$1 readdump=$2 make=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
"$make" "$work/chain.dump" --chain 300000 || exit 1
# The path to the sixth node of the chain (a deeper one prints a line per
# step, indented by its depth).
for verb in "--dominators --top 20" "--path-to-root 0x100140" "--classes"; do
  # shellcheck disable=SC2086
  "$readdump" $verb --no-index-cache --memory unlimited "$work/chain.dump" > "$work/ram.out" 2>&1
  # shellcheck disable=SC2086
  TMPDIR="$work" "$readdump" $verb --no-index-cache --memory 1M "$work/chain.dump" > "$work/bounded.out" 2>&1
  check "readdump $verb: the same under --memory 1M as in RAM" \
    "[ -s '$work/ram.out' ] && cmp -s '$work/ram.out' '$work/bounded.out'"
  case $verb in
    --path*) check "the path is the chain's first six nodes" "[ \$(grep -c 'Node@' '$work/ram.out') -eq 6 ]" ;;
    --dom*) check "the chain's head retains it all" "grep -q '^7200000\s' '$work/ram.out'" ;;
  esac
done
"$readdump" --dominators --memory 12X "$work/chain.dump" > /dev/null 2> "$work/err"
check "readdump --memory 12X: exit 2, says why" "[ $? -eq 2 ] && grep -q 'memory takes a size' '$work/err'"
"$heapview" --memory 0 "$work/chain.dump" > /dev/null 2> "$work/err"
check "heapview --memory 0: exit 2, says why" "[ $? -eq 2 ] && grep -q 'memory takes a size' '$work/err'"
exit $fail
