#!/usr/bin/env bash
# The typing pass's DWARF rule on a -g program dumped under LD_PRELOAD on
# SIGUSR2: every count is the program's own (nodes, bodies and their element
# counts, string buffers and their capacities), enough of the bytes are named
# by the dump and DWARF rules, and every DWARF-named class is a name the
# program's DWARF holds (eu-readelf, not the typing pass's reader).
#   containers: dwarf_containers_prog.cc, plain structs in the standard
#               containers; >= 97 % named
#   json:       nlohmann_json_prog.cc, Debian's nlohmann-json3-dev holding a
#               parsed document; >= 90 % named
#   dwarf_rule_test.sh BUILD_DIR PROG CHECK containers|json
set -euo pipefail
build=$1 prog=$2 check=$3 mode=$4
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

LD_PRELOAD="$build/libdump/libdump.so" LIBDUMP_HEAPDUMP_SIGNAL=USR2 \
  LIBDUMP_HEAPDUMP_PATH="$work/heap.dump" "$prog" >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 600); do grep -q ready "$work/out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$work/out" || fail "the program did not start"
kill -USR2 "$pid"
for _ in $(seq 600); do grep -q 'written to' "$work/err" 2>/dev/null && break; sleep 0.1; done
[ -s "$work/heap.dump" ] || fail "no dump: $(cat "$work/err")"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

"$check" "$work/heap.dump" "$prog" >"$work/classes" || fail "dwarf_rule_check failed"

# rule, count and sum of element counts of a class
expect() {
  local rule=$1 count=$2 elements=$3 name=$4
  local line
  line=$(awk -F'\t' -v n="$name" '$1 == "class" && $6 == n' "$work/classes")
  [ -n "$line" ] || fail "no class '$name'"
  read -r _ r c _ e _ <<<"$(echo "$line" | tr '\t' ' ')"
  [ "$r" = "$rule" ] || fail "'$name': rule $r, expected $rule"
  [ "$c" = "$count" ] || fail "'$name': $c objects, expected $count"
  [ "$elements" = - ] || [ "$e" = "$elements" ] || fail "'$name': $e elements, expected $elements"
  echo "ok: $count x $name ($rule, $e elements)"
}
case $mode in
containers)
# Owner names: 20 + i % 10 characters for 4000 accounts, 30 + i % 5 for 1200
# journal entries, 40 for the owner; each buffer is length + 1.
owners=$(( (4000 / 10) * (21 + 30) * 10 / 2 + (1200 / 5) * (31 + 35) * 5 / 2 + 41 ))
expect dwarf 1 0 "Service"
expect dwarf 4000 0 "std::_Rb_tree_node<std::pair<int const, Account> >"
expect dwarf 1 2500 "Order[]"
expect dwarf 2501 $(( 2500 * 4 + 3000000 )) "long int[]"
expect dwarf 3000 0 "std::__detail::_Hash_node<std::pair<long int const, Point>, false>"
expect dwarf 1 - "std::__detail::_Hash_node_base*[]"
expect dwarf 1200 0 "std::_List_node<Account>"
expect dwarf 50 0 "std::_List_node<Point>"  # main's local, through its frame
expect dwarf 1 - "Point*[]"
# 469 deque blocks of 64, and the 10 Polys' bodies of 7 (reached through
# their dynamic class: the vector holds unique_ptr<Shape>)
expect dwarf 479 $(( 469 * 64 + 10 * 7 )) "Point[]"
expect dump 10 0 "Poly"
expect dwarf 1 10 "std::unique_ptr<Shape, std::default_delete<Shape> >[]"
expect dwarf 5201 "$owners" "std::string buffer"
expect dwarf 1 0 "Account"
expect dwarf 1 0 "Point"
expect dwarf 1 0 "Big"
expect dump 1 0 "std::_Sp_counted_ptr_inplace<Order, std::allocator<void>, (__gnu_cxx::_Lock_policy)2>"
# std::optional (engaged), std::variant (its index names the vector) and
# std::unique_ptr<T[]> (its length is the allocation's: not checked)
expect dwarf 1 9 "Tick[]"
expect dwarf 1 11 "Cell[]"
expect dwarf 1 - "Pixel[]"

min=0.97
;;
json)
json_t="nlohmann::json_abi_v3_11_2::basic_json<std::map, std::vector, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, bool, long int, long unsigned int, double, std::allocator, nlohmann::json_abi_v3_11_2::adl_serializer, std::vector<unsigned char, std::allocator<unsigned char> > >"
str_t="std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
# (GCC spells "> >" where two templates' lists end together.)
# 10000 records of 6 members (id, owner, balance, tags, active, limits), each
# limits 2 (daily, monthly), the document 2 (service, records).
expect dwarf 1 0 "$json_t"
expect dwarf 80002 0 "std::_Rb_tree_node<std::pair<const $str_t, $json_t > >"
expect dwarf 20001 0 "std::map<$str_t, $json_t, std::less<void>, std::allocator<std::pair<const $str_t, $json_t > > >"
expect dwarf 10001 0 "std::vector<$json_t, std::allocator<$json_t > >"
expect dwarf 10001 30000 "$json_t[]"
# strings: owner and two tags a record, and the service; buffers: those
# longer than 15 characters (owner, the first tag, the service)
expect dwarf 30001 0 "$str_t"
expect dwarf 20001 - "std::string buffer"
min=0.90
;;
*) fail "unknown mode $mode" ;;
esac

read -r _ fraction named total <<<"$(grep '^named' "$work/classes" | tr '\t' ' ')"
awk -v f="$fraction" -v m="$min" 'BEGIN { exit !(f >= m) }' || fail "named $named of $total bytes ($fraction), expected >= $min"
echo "ok: $named of $total bytes named by the dump and DWARF ($fraction)"

# The names are DWARF names (qualified by the enclosing namespaces): each
# DWARF-named class, less "[]" and its namespaces, is a DW_AT_name of the
# program or of libdump.so (built with -g too, its own objects are named).
for f in "$prog" "$build/libdump/libdump.so"; do
  eu-readelf --debug-dump=info "$f" | sed -n 's/^ *name *([a-z0-9_]*) "\(.*\)"$/\1/p'
done | sort -u >"$work/names"
awk -F'\t' '$1 == "class" && $2 == "dwarf" { print $6 }' "$work/classes" | while IFS= read -r c; do
  case $c in "std::string buffer") continue ;; esac
  base=${c%\[\]}
  base=${base%\*}
  # drop the namespace prefix outside any template argument list
  short=$(awk -v s="$base" 'BEGIN { d = 0; cut = 0; for (i = 1; i <= length(s); i++) { ch = substr(s, i, 1);
    if (ch == "<") d++; else if (ch == ">") d--; else if (d == 0 && substr(s, i, 2) == "::") cut = i + 1 }
    print substr(s, cut + 1) }')
  grep -qxF -- "$short" "$work/names" || fail "class '$c': '$short' is not a DWARF name of the program or libdump.so"
done
echo "ok: every DWARF-named class is a name in the program's DWARF"
