#!/usr/bin/env bash
# The typing tests' container program (tests/typing/containers_program.cc,
# -g) run on glibc's malloc and cored, beside the same program under the
# preload: the typing pass names the same classes with the same counts, and
# at least 95 % of the bytes on glibc.
#   coredump_typing.sh BINDIR PROGRAM   (KEEP=1 keeps the files)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Under the preload: the program dumps itself on SIGUSR2 (as typing_containers.sh).
LD_PRELOAD=$bindir/libdump/libdump.so LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/preload.dump" \
  "$program" "$dir/preload.dump" > "$dir/preload.out" || fail "the program did not run under the preload"
# On glibc: SIGUSR2 ignored (inherited through exec), so its raise() is a
# no-op; it waits until its dump file exists, which coretodump writes.
(trap '' USR2; exec "$program" "$dir/glibc.dump") > "$dir/glibc.out" &
pid=$!
# It raises SIGUSR2 once its containers are built, then polls for the file
# with usleep: wait until it sleeps there (clock_nanosleep, syscall 230).
for _ in $(seq 600); do
  [ "$(cut -d' ' -f1 "/proc/$pid/syscall" 2>/dev/null)" = 230 ] && break
  sleep 0.1
done
gcore -o "$dir/core" "$pid" > "$dir/gcore.out" 2>&1 || fail "gcore: $(tail -1 "$dir/gcore.out")"
"$coretodump" "$dir/core.$pid" -o "$dir/glibc.dump" > "$dir/summary" || fail "coretodump"
wait "$pid" || fail "the program on glibc failed"
[ "$(cat "$dir/glibc.out")" = "1000 800 10000 200 400 300" ] || fail "the program printed $(cat "$dir/glibc.out")"
"$readdump" --validate "$dir/glibc.dump" > "$dir/validate" 2>&1 || fail "the dump does not validate: $(head -3 "$dir/validate")"

"$readdump" --classes "$dir/preload.dump" > "$dir/preload.classes"
"$readdump" --classes "$dir/glibc.dump" > "$dir/glibc.classes"
count() { awk -F'\t' -v c="$2" '$5 == c { n += $1 } END { print n + 0 }' "$1"; }
str='std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >'
for class in 'std::_Rb_tree_node<std::pair<int const, Account> >' "std::_Rb_tree_node<$str >" \
    "std::__detail::_Hash_node<std::pair<long unsigned int const, $str >, false>" \
    'std::__detail::_Hash_node_base*[]' 'int[]' 'int*[]' "$str[]" 'Account[]' 'std::_List_node<Account>' 'Ledger'; do
  p=$(count "$dir/preload.classes" "$class")
  g=$(count "$dir/glibc.classes" "$class")
  echo "$class: preload $p, glibc $g"
  [ "$p" = "$g" ] || fail "$class: $g objects on glibc, $p under the preload"
done
named() { sed -n 's/^typed: .* bytes (\([0-9]*\)\.[0-9] %)$/\1/p' "$1"; }
echo "named: preload $(named "$dir/preload.classes") %, glibc $(named "$dir/glibc.classes") %"
[ "$(named "$dir/glibc.classes")" -ge 95 ] || fail "$(named "$dir/glibc.classes") % of bytes named on glibc"
echo "PASS: $(cat "$dir/summary")"
