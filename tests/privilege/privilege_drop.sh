#!/bin/sh
# Privilege drops under LD_PRELOAD=libdump.so with every helper thread
# running: setpriv, an su-style drop, a temporary seteuid drop and
# util-linux setpriv's keep-capabilities order in a program of our own. glibc
# makes every thread repeat a set*id call and aborts when their results
# differ; libdump's threads must not be the ones that differ. Needs root.
#   privilege_drop.sh LIBDUMP_SO PROGRAM WORKDIR
set -u
RT=$1
PROG=$2
D=$3
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: privilege drops need root (this test runs as uid $(id -u))"
  exit 77
fi
rm -rf "$D"
mkdir -p "$D/dumps"
chmod 777 "$D" "$D/dumps"
fail=0
say_fail() { echo "FAIL: $*"; fail=1; }
ALL="LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH=$D/dumps/heap.%p.%n.dump LIBDUMP_PPROF_ADDR=127.0.0.1:0
LIBDUMP_BACKGROUND_RELEASE=1 LIBDUMP_FLIGHT_RECORDER=1 LIBDUMP_CPUPROFILE=$D/cpu.prof LIBDUMP_PROFILE_SIGNAL=USR1"
for vars in "LIBDUMP_HEAPDUMP_SIGNAL=USR2" "LIBDUMP_PPROF_ADDR=127.0.0.1:0" "LIBDUMP_BACKGROUND_RELEASE=1" \
            "LIBDUMP_FLIGHT_RECORDER=1" "LIBDUMP_CPUPROFILE=$D/cpu.prof" "LIBDUMP_PROFILE_SIGNAL=USR1" "$ALL"; do
  # shellcheck disable=SC2086
  env LD_PRELOAD="$RT" $vars timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups /bin/true 2>"$D/err"
  rc=$?
  if [ $rc = 0 ]; then echo "ok: setpriv with $(echo $vars | tr '\n' ' ')"
  else say_fail "setpriv with $vars: exit $rc: $(head -3 "$D/err")"; fi
done
for mode in setpriv su seteuid; do
  # shellcheck disable=SC2086
  out=$(env LD_PRELOAD="$RT" $ALL timeout 60 "$PROG" $mode "$D/dumps" 2>"$D/err")
  rc=$?
  if [ $rc = 0 ]; then echo "$out"
  else say_fail "$mode drop: exit $rc: $(grep -v '^libdump: serving' "$D/err" | head -5)"; fi
done
# The dumps written after the drop belong to the new user.
owners=$(stat -c %u "$D"/dumps/* 2>/dev/null | sort -u | tr '\n' ' ')
[ "$owners" = "65534 " ] || say_fail "dumps after the drop owned by: '$owners'"
exit $fail
