#!/usr/bin/env bash
# Other libraries' containers and Protocol Buffers messages under the typing
# pass, with symbols and stripped: no shape names a layout of abseil or Boost
# as a libstdc++ container the program does not use; the messages are counted
# exactly; --histogram shows the classes and counts of --classes.
#   typing_libraries.sh BINDIR LIBS LIBS_STRIPPED PROTOBUF PROTOBUF_STRIPPED   (KEEP=1 keeps the dumps)
set -euo pipefail
bindir=$(cd "$1" && pwd)
lib=$bindir/libdump/libdump.so
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; head -40 "$dir/classes" 2>/dev/null; exit 1; }

dump() {  # PROGRAM NAME EXPECTED_OUTPUT (a dump is never overwritten: one NAME per program)
  LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/$2.dump" "$1" "$dir/$2.dump" > "$dir/$2.out" \
    || fail "$2 did not run"
  [ "$(cat "$dir/$2.out")" = "$3" ] || fail "$2 printed $(cat "$dir/$2.out")"
  "$readdump" --classes "$dir/$2.dump" > "$dir/classes"
  "$readdump" --histogram "$dir/$2.dump" > "$dir/histogram"
}
count() { awk -F'\t' -v c="$1" '$5 == c { n += $1 } END { print n + 0 }' "$dir/classes"; }
# The count of one class in --histogram (count, bytes, type id, rule, class).
hist_count() { awk -v c="$1" 'NR > 1 { n = $1; $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); if ($0 == c) s += n } END { print s + 0 }' "$dir/histogram"; }
expect() {  # CLASS N: in --classes and in --histogram
  [ "$(count "$1")" = "$2" ] || fail "$1: $(count "$1") objects, expected $2"
  [ "$(hist_count "$1")" = "$2" ] || fail "--histogram: $1: $(hist_count "$1") objects, expected $2"
}
# A shape of a libstdc++ container the program does not use is a wrong name.
no_wrong_names() {  # PATTERN
  if grep -E "	shape	($1)" "$dir/classes"; then fail "a libstdc++ shape named another library's layout"; fi
}

for p in "$2" "$3"; do
  dump "$p" "$(basename "$p")" "1000 3000 2000 800 500"
  no_wrong_names 'std::unordered_map|std::map|std::list|std::deque'
  [ "$(count 'std::string buffer')" = "$(hist_count 'std::string buffer')" ] || fail "--histogram and --classes differ"
  if [ "$p" = "$2" ]; then
    # With -g the swiss tables' slots (inside the allocation their control
    # bytes start) are typed and their full slots followed: node_hash_map's
    # node pointers to its nodes and blobs, flat_hash_map's one array of
    # map_slot_type (through its `value`) to each key's and record's buffer.
    expect '(anonymous namespace)::Blob' 1000
    expect 'std::pair<int const, std::unique_ptr<(anonymous namespace)::Blob, std::default_delete<(anonymous namespace)::Blob> > >' 1000
    expect 'absl::debian3::container_internal::map_slot_type<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, (anonymous namespace)::Record>[]' 1
    if grep -q 'ctrl_t' "$dir/classes"; then fail "a swiss table named by its control bytes"; fi
    # The flat_hash_map's 3,000 keys and 3,000 record labels and the btree's
    # 2,000 order labels (all longer than a short string): the btree's nodes
    # are read by their layout and each child named once its links prove it,
    # so nothing is left held by a node.
    [ "$(awk -F'\t' '$4 == "dwarf" && $5 == "std::string buffer" { n += $1 } END { print n + 0 }' "$dir/classes")" -ge 8000 ] \
      || fail "the strings of the tables' slots are not named by their DWARF"
    if grep -q 'held by absl::[a-z0-9]*::container_internal::btree_node' "$dir/classes"; then fail "a btree node's child or value named by its holder"; fi
    # libstdc++'s emergency exception pool, at rest, named by its shape.
    expect 'libstdc++ emergency exception pool' 1
    "$readdump" "$dir/$(basename "$p").dump" > "$dir/summary"
    held=$(sed -n 's/.*by a holder or a size: [0-9]* bytes (\([0-9]*\)\.[0-9] %).*/\1/p' "$dir/summary")
    [ -n "$held" ] && [ "$held" -lt 5 ] || fail "$held % of the bytes named by a holder or a size with -g"
  fi
  echo "PASS: $(basename "$p"): $(sed -n 1p "$dir/classes")$([ "$p" = "$2" ] && echo "; $(grep '^  named by a type' "$dir/summary" | sed 's/^ *//')")"
done

# The percentage of bytes a type names (dump, DWARF, shape), as an integer.
type_percent() { sed -n 's/^  named by a type (dump, dwarf, shape): [0-9]* bytes (\([0-9]*\)\.[0-9] %).*/\1/p' "$dir/summary"; }
for p in "$4" "$5"; do
  name=$(basename "$p")
  dump "$p" "$name" "2000 10000"
  # libprotobuf's own std::maps (its descriptor pool's) are real: only hash shapes are checked.
  no_wrong_names 'std::unordered_map'
  expect shop::Order 2000
  expect shop::LineItem 10000
  "$readdump" "$dir/$name.dump" > "$dir/summary"
  if [ "$p" = "$4" ]; then
    # With -g the messages' fields are their DWARF class's, through `union { Impl_ _impl_; }`:
    # each order's two RepeatedPtrField reps (flexible `void* elements[]`, sized by their
    # allocation) and its map's table of buckets (void**).
    expect 'google::protobuf::internal::RepeatedPtrFieldBase::Rep' 4000
    expect 'void*[]' 2000
    # Each map's table heads lists of its InnerMap::Node (DWARF's nested type), 3 per order.
    expect 'google::protobuf::Map<int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >::InnerMap::Node' 6000
    [ "$(type_percent)" -ge 95 ] || fail "$(type_percent) % of the bytes named by a type with -g"
  fi
  echo "PASS: $(basename "$p"): $(sed -n 1p "$dir/classes"); $(grep '^  named by a type' "$dir/summary")"
done
