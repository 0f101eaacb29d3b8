#!/usr/bin/env bash
# coretodump on bad input: each case is one line on stderr and exit 1, or a
# dump that validates with its damage listed; never a crash, a hang, a
# clobbered output or a target left stopped.
#   coredump_bad_input.sh BINDIR PROGRAM   (PROGRAM: glibc_heap_program)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
chmod 755 "$dir"

# one_line NAME ARGS...: exit 1 and exactly one line on stderr, no output file.
one_line() {
  local name=$1 rc=0
  shift
  timeout 60 "$coretodump" "$@" > "$dir/$name.out" 2> "$dir/$name.err" || rc=$?
  [ "$rc" = 1 ] || fail "$name: exit $rc ($(head -2 "$dir/$name.err"))"
  [ "$(wc -l < "$dir/$name.err")" = 1 ] || fail "$name: $(wc -l < "$dir/$name.err") lines: $(cat "$dir/$name.err")"
  echo "$name: $(cat "$dir/$name.err")"
}
# stopped PID: the process is not stopped (ptrace-stop or job control).
not_stopped() {
  local s
  s=$(awk '{print $3}' "/proc/$1/stat")
  [ "$s" != t ] && [ "$s" != T ] || fail "process $1 left stopped (state $s)"
}

# A program to core, from a copy of the executable the test then deletes.
cp "$program" "$dir/prog"
"$dir/prog" "$dir/book" > "$dir/prog.out" 2>&1 &
pid=$!
wait_for "$dir/book"
gcore -o "$dir/core" "$pid" > /dev/null 2>&1 || fail "gcore"
core=$dir/core.$pid
size=$(stat -c %s "$core")

# Not a core: the executable, a text file, an empty file, a directory, nothing.
one_line exe "$dir/prog" -o "$dir/x.dump"
echo "hello" > "$dir/text"
one_line text "$dir/text" -o "$dir/x.dump"
: > "$dir/empty"
one_line empty "$dir/empty" -o "$dir/x.dump"
one_line directory "$dir" -o "$dir/x.dump"
one_line missing "$dir/no-such-core" -o "$dir/x.dump"
# A core of another architecture: e_machine (offset 18) AArch64.
cp "$core" "$dir/arm.core"
printf '\xb7\x00' | dd of="$dir/arm.core" bs=1 seek=18 conv=notrunc status=none
one_line foreign_arch "$dir/arm.core" -o "$dir/x.dump"
# Headers cut: only the ELF header and part of the program headers.
head -c 100 "$core" > "$dir/cut.core"
one_line cut_headers "$dir/cut.core" -o "$dir/x.dump"
[ ! -e "$dir/x.dump" ] || fail "an output was left behind"

# A truncated core (its second half gone): a dump that validates, the
# missing memory listed as damage; or one line.
head -c $((size / 2)) "$core" > "$dir/half.core"
rc=0
timeout 120 "$coretodump" "$dir/half.core" -o "$dir/half.dump" > "$dir/half.out" 2> "$dir/half.err" || rc=$?
if [ "$rc" = 0 ]; then
  grep -q 'damage' "$dir/half.err" || fail "truncated core: no damage listed ($(cat "$dir/half.out"))"
  "$readdump" --validate "$dir/half.dump" > /dev/null || fail "truncated core: the dump does not validate"
  echo "truncated: $(head -1 "$dir/half.err"); $(grep -c damage "$dir/half.err") damage lines; $(cat "$dir/half.out")"
else
  [ "$rc" = 1 ] && [ "$(wc -l < "$dir/half.err")" = 1 ] || fail "truncated core: exit $rc: $(head -3 "$dir/half.err")"
  # The line says where the core ends and what is missing past it.
  grep -q "half.core:$((size / 2)): the core ends here, .*PT_NOTE.*missing" "$dir/half.err" ||
    fail "truncated core: the error names no offset: $(cat "$dir/half.err")"
  echo "truncated: $(cat "$dir/half.err")"
fi

# The executable gone: the heap is still read (libc names main_arena).
rm "$dir/prog"
"$coretodump" "$core" -o "$dir/noexe.dump" > "$dir/noexe.out" 2> "$dir/noexe.err" || fail "missing executable: $(cat "$dir/noexe.err")"
"$readdump" --validate "$dir/noexe.dump" > /dev/null || fail "missing executable: the dump does not validate"
echo "missing executable: $(head -1 "$dir/noexe.err")"

# An existing output is kept.
echo keep > "$dir/existing.dump"
one_line existing "$core" -o "$dir/existing.dump"
[ "$(cat "$dir/existing.dump")" = keep ] || fail "the existing output was replaced"
# Usage errors exit 2.
rc=0; "$coretodump" "$core" 2> /dev/null || rc=$?
[ "$rc" = 2 ] || fail "no -o: exit $rc"
rc=0; "$coretodump" "$core" --pid "$pid" -o "$dir/y.dump" 2> /dev/null || rc=$?
[ "$rc" = 2 ] || fail "a core and --pid: exit $rc"

# A pid that has exited, and one that never was.
true & gone=$!; wait "$gone"
one_line exited_pid --pid "$gone" -o "$dir/x.dump"
# Another user's process without permission (not traceable by nobody).
if command -v setpriv > /dev/null && [ "$(id -u)" = 0 ]; then
  chmod 777 "$dir"
  rc=0
  setpriv --reuid=65534 --regid=65534 --clear-groups "$coretodump" --pid "$pid" -o "$dir/perm.dump" \
    > /dev/null 2> "$dir/perm.err" || rc=$?
  [ "$rc" = 1 ] && [ "$(wc -l < "$dir/perm.err")" = 1 ] || fail "permission: exit $rc: $(cat "$dir/perm.err")"
  echo "permission: $(cat "$dir/perm.err")"
  not_stopped "$pid"
fi

# A heap that is not glibc's: the same program under libdump's preload.
if [ -e "$bindir/libdump/libdump.so" ]; then
  LD_PRELOAD=$bindir/libdump/libdump.so "$program" "$dir/book2" > /dev/null 2>&1 &
  other=$!
  wait_for "$dir/book2"
  one_line other_allocator --pid "$other" -o "$dir/x.dump"
  grep -q "libdump" "$dir/other_allocator.err" || fail "the other allocator is not named"
  not_stopped "$other"
  kill -9 "$other"; wait "$other" 2>/dev/null || true
fi

# The live target after all of it: running, and its own checks pass.
not_stopped "$pid"
kill -USR1 "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" = 0 ] && grep -qx 'checks ok' "$dir/prog.out" || fail "the program after the attaches: exit $rc, $(cat "$dir/prog.out")"
echo PASS
