#!/usr/bin/env bash
# The typing pass's cost beside the untyped open, in one run: readdump
# --classes with --no-typing, then with typing, on each DUMP; wall time
# (best of 3) and peak RSS (GNU time).
#   bench/typing/typing_cost.sh BUILD_DIR DUMP...
set -euo pipefail
readdump=$1/tools/readdump/readdump
shift
best() {  # prints "SECONDS KB" of the fastest of three runs
  local b="" m=""
  for _ in 1 2 3; do
    read -r s k < <( { /usr/bin/time -f "%e %M" "$readdump" --classes "$@" > /dev/null; } 2>&1 | tail -1)
    if [ -z "$b" ] || awk -v a="$s" -v c="$b" 'BEGIN { exit !(a < c) }'; then b=$s; m=$k; fi
  done
  echo "$b $m"
}
printf '| dump | objects | untyped open s | typed open s | untyped peak KB | typed peak KB | named bytes before | after |\n|---|---|---|---|---|---|---|---|\n'
for d in "$@"; do
  read -r s0 k0 < <(best --no-typing "$d")
  read -r s1 k1 < <(best "$d")
  objs=$("$readdump" --classes "$d" | sed -n 's/^typed: [0-9]* of \([0-9]*\) objects.*/\1/p')
  after=$("$readdump" --classes "$d" | sed -n 's/^typed: .* bytes (\(.*\))$/\1/p')
  before=$("$readdump" --classes --no-typing "$d" | sed -n 's/^typed: .* bytes (\(.*\))$/\1/p')
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(basename "$d")" "$objs" "$s0" "$s1" "$k0" "$k1" "$before" "$after"
done
