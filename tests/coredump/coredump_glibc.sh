#!/usr/bin/env bash
# coretodump on a program on glibc's malloc with known blocks
# (glibc_heap_program.c): from gcore's core and from a live attach, the dump
# validates and its objects are exactly the program's blocks and libc's
# (check_glibc_dump.py); the program keeps running and its own checks pass.
#   coredump_glibc.sh BINDIR PROGRAM   (KEEP=1 keeps the files)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$program" "$dir/book" > "$dir/program.out" 2>&1 &
pid=$!
wait_for "$dir/book"

gcore -o "$dir/core" "$pid" > "$dir/gcore.out" 2>&1 || fail "gcore: $(tail -1 "$dir/gcore.out")"
"$coretodump" "$dir/core.$pid" -o "$dir/core.dump" > "$dir/core.summary" || fail "coretodump of the core"
echo "core: $(cat "$dir/core.summary")"
"$coretodump" --pid "$pid" -o "$dir/live.dump" > "$dir/live.summary" || fail "coretodump --pid"
echo "live: $(cat "$dir/live.summary")"
grep -q 'target stopped' "$dir/live.summary" || fail "no stop time in the live summary"
# The target runs on: not stopped (state S, sleeping in sigtimedwait), and it
# answers SIGUSR1 by checking every block it holds.
state=$(awk '{print $3}' "/proc/$pid/stat")
[ "$state" = S ] || fail "the target is in state $state after the attach"
kill -USR1 "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || fail "the program exited $rc: $(cat "$dir/program.out")"
grep -qx 'checks ok' "$dir/program.out" || fail "the program printed $(cat "$dir/program.out")"

for d in core live; do
  "$readdump" --validate "$dir/$d.dump" > "$dir/$d.validate" 2>&1 || fail "$d dump does not validate: $(head -3 "$dir/$d.validate")"
  "$readdump" --records "$dir/$d.dump" > "$dir/$d.records"
  python3 "$here/check_glibc_dump.py" "$dir/book" "$dir/$d.records" || fail "$d dump"
done
# Both views of the same moment agree object for object.
cmp -s <(grep '^object' "$dir/core.records" | sed 's/ at=[0-9]*//') \
       <(grep '^object' "$dir/live.records" | sed 's/ at=[0-9]*//') || fail "the core's and the live dump's objects differ"
echo "PASS"
