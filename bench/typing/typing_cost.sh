#!/usr/bin/env bash
# The typing pass's cost beside the untyped open, in one run: readdump
# --classes with --no-typing, then with typing, on each DUMP; wall time
# CPU seconds, user + system (best of 5: the machine is shared, and CPU time
# is what contention disturbs least) and peak RSS (GNU time); no index cache
# (readdump would answer a dump of 64 MiB or more from its index after the first run).
#   bench/typing/typing_cost.sh BUILD_DIR DUMP...
set -euo pipefail
readdump=$1/tools/readdump/readdump
shift
best() {  # prints "CPU_SECONDS KB" of the fastest of five runs
  local b="" m=""
  for _ in 1 2 3 4 5; do
    read -r u y k < <( { /usr/bin/time -f "%U %S %M" "$readdump" --classes --no-index-cache "$@" > /dev/null; } 2>&1 | tail -1)
    s=$(awk -v a="$u" -v c="$y" 'BEGIN { printf "%.2f", a + c }')
    if [ -z "$b" ] || awk -v a="$s" -v c="$b" 'BEGIN { exit !(a < c) }'; then b=$s; m=$k; fi
  done
  echo "$b $m"
}
printf '| dump | objects | untyped open CPU s | typed open CPU s | untyped peak KB | typed peak KB | named bytes before | after |\n|---|---|---|---|---|---|---|---|\n'
for d in "$@"; do
  read -r s0 k0 < <(best --no-typing "$d")
  read -r s1 k1 < <(best "$d")
  objs=$("$readdump" --classes --no-index-cache "$d" | sed -n 's/^typed: [0-9]* of \([0-9]*\) objects.*/\1/p')
  after=$("$readdump" --classes --no-index-cache "$d" | sed -n 's/^typed: .* bytes (\(.*\))$/\1/p')
  before=$("$readdump" --classes --no-index-cache --no-typing "$d" | sed -n 's/^typed: .* bytes (\(.*\))$/\1/p')
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(basename "$d")" "$objs" "$s0" "$s1" "$k0" "$k1" "$before" "$after"
done
