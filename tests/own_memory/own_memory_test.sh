#!/usr/bin/env bash
# libdump's own memory is left out of what readdump and dumptohprof say
# about the program, stated in one line, and the sums add up; with
# --include-own it is one class per component, never a "(held by ...)" row.
#   own_memory_test.sh BINDIR EXAMPLE CONTAINERS_PROGRAM   (KEEP=1 keeps the dumps)
set -euo pipefail
bindir=$(cd "$1" && pwd)
example=$2
containers=$3
lib=$bindir/libdump/libdump.so
readdump=$bindir/tools/readdump/readdump
dumptohprof=$bindir/tools/dumptohprof/dumptohprof
dir=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
rd() { "$readdump" --no-index-cache "$@"; }

check() {  # DUMP NAME
  local dump=$1 name=$2 own n b total_n total_b in_n in_b
  rd --dominators --top 5 "$dump" > "$dir/$name.top"
  own=$(sed -n "s/^libdump's own: \([0-9]*\) objects, \([0-9]*\) bytes, excluded; --include-own to show$/\1 \2/p" "$dir/$name.top")
  [ -n "$own" ] || fail "$name: no line for libdump's own memory: $(head -3 "$dir/$name.top")"
  read -r n b <<< "$own"
  [ "$n" -gt 0 ] && [ "$b" -gt 0 ] || fail "$name: libdump's own is $n objects, $b bytes"
  # The five rows below the header: none of them libdump's.
  rows=$(awk '/^retained/ { on = 1; next } on && NF >= 4' "$dir/$name.top" | head -5)
  [ "$(echo "$rows" | wc -l)" = 5 ] || fail "$name: not five retainers: $rows"
  if echo "$rows" | grep -q 'libdump'; then fail "$name: libdump in the top five retainers: $rows"; fi
  # The sums: the histogram without libdump's own, plus its line, is every object of the dump.
  rd --histogram "$dump" > "$dir/$name.hist"
  read -r total_n total_b <<< "$(awk '/total, [0-9]* (types|classes)$/ { print $1, $2 }' "$dir/$name.hist")"
  grep -qx "libdump's own: $n objects, $b bytes, excluded; --include-own to show" "$dir/$name.hist" ||
    fail "$name: the histogram's own line differs from the dominators': $(tail -1 "$dir/$name.hist")"
  if grep -q '^ .* libdump: ' "$dir/$name.hist"; then fail "$name: a libdump class in the default histogram"; fi
  read -r all_n all_b <<< "$(rd "$dump" | sed -n 's/^objects: \([0-9]*\) .*, \([0-9]*\) bytes$/\1 \2/p')"
  [ $((total_n + n)) = "$all_n" ] && [ $((total_b + b)) = "$all_b" ] ||
    fail "$name: $total_n + $n objects, $total_b + $b bytes; the dump holds $all_n, $all_b"
  rd --include-own --histogram "$dump" > "$dir/$name.hist-own"
  read -r in_n in_b <<< "$(awk '/total, [0-9]* (types|classes)$/ { print $1, $2 }' "$dir/$name.hist-own")"
  [ "$in_n $in_b" = "$all_n $all_b" ] || fail "$name: --include-own histogram totals $in_n, $in_b"
  grep -q ' libdump: dump writer$' "$dir/$name.hist-own" || fail "$name: no 'libdump: dump writer' class with --include-own"
  # Shown, it is classes of its own and roots of its own, never held-by chains.
  rd --include-own --dominators --top 100000 "$dump" > "$dir/$name.top-own"
  grep -q $'\tlibdump: dump writer@0x' "$dir/$name.top-own" || fail "$name: no libdump object among the --include-own retainers"
  if grep -q '(held by .*libdump' "$dir/$name.top-own"; then
    fail "$name: a (held by ...libdump...) row: $(grep -m1 '(held by .*libdump' "$dir/$name.top-own")"
  fi
  rd --include-own --classes "$dump" | grep -q 'libdump: symbolizer' || fail "$name: no 'libdump: symbolizer' class"
  # dumptohprof says the same.
  "$dumptohprof" --force "$dump" "$dir/$name.hprof" > "$dir/$name.conv" 2>&1
  grep -qx "libdump's own: $n objects, $b bytes, excluded; --include-own to show" "$dir/$name.conv" ||
    fail "$name: dumptohprof: $(cat "$dir/$name.conv")"
  echo "PASS: $name: libdump's own $n objects, $b bytes left out; top five: $(echo "$rows" | awk -F'\t' '{ print $4 }' | paste -sd ';')"
}

"$example" "$dir/example.dump" > /dev/null || fail "the example did not run"
check "$dir/example.dump" example

LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/containers.dump" \
  "$containers" "$dir/containers.dump" > /dev/null || fail "the containers program did not run"
check "$dir/containers.dump" containers
