#!/usr/bin/env bash
# The typing pass names the standard containers of containers_program.cc,
# counted exactly, and names most of its bytes, with symbols and stripped.
#   typing_containers.sh BINDIR PROGRAM STRIPPED_PROGRAM   (KEEP=1 keeps the dumps)
set -euo pipefail
bindir=$(cd "$1" && pwd)
lib=$bindir/libdump/libdump.so
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/classes" 2>/dev/null | head -40; exit 1; }

dump() {  # PROGRAM NAME [ENV...]
  env "${@:3}" LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/$2.dump" "$1" "$dir/$2.dump" > "$dir/$2.out" \
    || fail "$2 did not run"
  [ "$(cat "$dir/$2.out")" = "1000 800 10000 200 400 300" ] || fail "$2 printed $(cat "$dir/$2.out")"
}

# count CLASS: the instances of one class in the typed histogram.
count() { awk -F'\t' -v c="$1" '$5 == c { n += $1 } END { print n + 0 }' "$dir/classes"; }
expect() {  # CLASS N
  local n
  n=$(count "$1")
  [ "$n" = "$2" ] || fail "$1: $n objects, expected $2"
}
# The percentage of bytes named by rules 1-4 (the typed line), as an integer.
named_percent() { sed -n 's/^typed: .* bytes (\([0-9]*\)\.[0-9] %)$/\1/p' "$dir/classes"; }

dump "$2" debug
"$readdump" --classes "$dir/debug.dump" > "$dir/classes"
# With symbols, the DWARF rule names them by their types (docs/TYPING.md).
str='std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >'
expect 'std::_Rb_tree_node<std::pair<int const, Account> >' 1000
expect "std::_Rb_tree_node<$str >" 200
expect "std::__detail::_Hash_node<std::pair<long unsigned int const, $str >, false>" 800
expect 'std::__detail::_Hash_node_base*[]' 1
expect 'int[]' 79
expect 'int*[]' 1
expect "$str[]" 1
expect 'Account[]' 1
expect 'std::_List_node<Account>' 300
expect 'Ledger' 1
# 800 + 200 + 400 strings and the ledger's owner (libdump.so's own strings come on top)
[ "$(count 'std::string buffer')" -ge 1401 ] || fail "$(count 'std::string buffer') string buffers, expected at least 1401"
# Retained sizes by class, counted by hand: a map<int, Account> node is 32
# bytes of links, the key and its padding (8) and an Account (32): 72, an
# 80-byte slot, holding nothing; a deque<int> block is 512 bytes of ints; a
# list<Account> node is 16 bytes of links and an Account: 48. (The classes
# whose nodes hold buffers are not counted: a stale pointer to one buffer on a
# stack makes the roots, not the node, its dominator.)
retained() { awk -F'\t' -v c="$1" '$5 == c { print $3 }' "$dir/classes"; }
expect_retained() {  # CLASS BYTES
  [ "$(retained "$1")" = "$2" ] || fail "$1 retains $(retained "$1"), expected $2"
}
expect_retained 'std::_Rb_tree_node<std::pair<int const, Account> >' $((1000 * 80))
expect_retained 'int[]' $((79 * 512))
expect_retained 'std::_List_node<Account>' $((300 * 48))
[ "$(named_percent)" -ge 75 ] || fail "$(named_percent) % of bytes named with symbols"
echo "PASS: -g: $(sed -n 1p "$dir/classes")"

# The shapes the stripped program's containers make, counted exactly.
expect_shapes() {
  expect 'std::map node' 1200
  expect 'std::unordered_map node' 800
  expect 'std::unordered_map buckets' 1
  expect 'std::deque block' 79
  expect 'std::deque map' 1
  expect 'std::list node' 300
  expect 'std::string buffer (held by std::unordered_map node +0x10)' 800
}

dump "$3" stripped
"$readdump" --classes "$dir/stripped.dump" > "$dir/classes"
expect_shapes
expect 'std::string buffer (held by std::map node +0x20)' 200
[ "$(named_percent)" -ge 75 ] || fail "$(named_percent) % of bytes named stripped"
# Deterministic: the same table twice.
"$readdump" --classes "$dir/stripped.dump" | cmp -s - "$dir/classes" || fail "two runs differ"
# --histogram, the first view, is typed: the classes and counts of --classes;
# --raw-types (and --no-typing) the dump's own types.
hist_count() { awk -v c="$1" '$4 == "shape" { n = $1; $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); if ($0 == c) s += n } END { print s + 0 }' "$dir/histogram"; }
"$readdump" --histogram "$dir/stripped.dump" > "$dir/histogram"
[ "$(hist_count 'std::map node')" = 1200 ] || fail "--histogram: $(hist_count 'std::map node') std::map nodes, expected 1200"
[ "$(hist_count 'std::unordered_map node')" = 800 ] || fail "--histogram: $(hist_count 'std::unordered_map node') hash nodes"
"$readdump" --histogram --raw-types "$dir/stripped.dump" | grep -q ' (untyped)$' || fail "--raw-types typed"
"$readdump" --histogram --no-typing "$dir/stripped.dump" | grep -q ' (untyped)$' || fail "--histogram --no-typing typed"
"$readdump" "$dir/stripped.dump" | grep -q '^  named by a type (dump, dwarf, shape): ' || fail "the summary does not part type- from holder-named bytes"
# --no-typing keeps the dump's own classes.
"$readdump" --classes --no-typing "$dir/stripped.dump" | grep -q '	untyped	(untyped)$' || fail "--no-typing typed"
# Leaks: a report, and the same in JSON. The program leaks nothing, and the
# dump's own state (its module list, symbolizer, unwinder) has a root of its
# own: what is left is at most the C library's start-up block or two.
"$readdump" --leaks "$dir/stripped.dump" > "$dir/leaks"
unreachable=$(sed -n 's/^unreachable: [0-9]* objects, \([0-9]*\) bytes .*/\1/p' "$dir/leaks")
[ -n "$unreachable" ] || fail "--leaks: $(head -1 "$dir/leaks")"
[ "$unreachable" -le 1024 ] || fail "--leaks reports $unreachable bytes of a program that leaks nothing: $(head -5 "$dir/leaks")"
"$readdump" --records "$dir/stripped.dump" | grep -q '^otherroot .*description="libdump: the heap dump being written"' \
  || fail "no root for the dump's own state"
"$readdump" --leaks --json "$dir/stripped.dump" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "clusters" in d' \
  || fail "--leaks --json"
echo "PASS: stripped: $(sed -n 1p "$dir/classes")"

# The debug heap (docs/ALLOCATOR.md) hands out slots whose unwritten bytes are
# poison and reuses them in another order: the shapes are the same.
dump "$3" debugheap LIBDUMP_DEBUG_HEAP=1
"$readdump" --classes "$dir/debugheap.dump" > "$dir/classes"
expect_shapes
[ "$(named_percent)" -ge 75 ] || fail "$(named_percent) % of bytes named under the debug heap"
echo "PASS: debug heap: $(sed -n 1p "$dir/classes")"
