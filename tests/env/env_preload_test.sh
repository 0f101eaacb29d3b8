#!/bin/sh
# LIBDUMP_* variables under LD_PRELOAD=libdump.so, end to end: the spellings
# users write take effect (seen from outside the process where it shows one),
# anything else is one stderr line naming the variable and the value, and the
# process runs on with the documented default.
#   env_preload_test.sh LIBDUMP_SO WORKDIR
set -u
lib=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }

# Runs /bin/true with the variables; stderr in $work/err.
run() { env "$@" LD_PRELOAD="$lib" /bin/true 2> "$work/err"; }
# Exactly this one line on stderr, and the program ran.
says() {
  name=$1 want=$2; shift 2
  run "$@"
  rc=$?
  printf '%s\n' "$want" > "$work/want"
  check "$name" "[ $rc -eq 0 ] && cmp -s '$work/err' '$work/want' || { cat '$work/err'; false; }"
}
quiet() {
  name=$1; shift
  run "$@"
  check "$name: accepted silently" "[ $? -eq 0 ] && [ ! -s '$work/err' ] || { cat '$work/err'; false; }"
}
B='is not a boolean (1/0, true/false, yes/no, on/off)'
S='is not a signal (a name such as USR2 or SIGUSR2, RTMIN+N, or a number)'

quiet "booleans" LIBDUMP_BACKGROUND_RELEASE=no LIBDUMP_HEAPDUMP_ZSTD=On LIBDUMP_HEAPDUMP_ON_OOM=FALSE
quiet "hugepages auto/on/off" LIBDUMP_HUGEPAGES=auto
quiet "hugepages yes" LIBDUMP_HUGEPAGES=yes
quiet "an empty value is unset" LIBDUMP_HUGEPAGES= LIBDUMP_HEAPDUMP_SIGNAL=
quiet "signal names" LIBDUMP_HEAPDUMP_SIGNAL=SIGUSR1 LIBDUMP_STOP_SIGNAL=RTMIN+5
says "LIBDUMP_HUGEPAGES=maybe" \
  "libdump: LIBDUMP_HUGEPAGES=maybe is not auto or a boolean (1/0, true/false, yes/no, on/off); using auto" \
  LIBDUMP_HUGEPAGES=maybe
says "LIBDUMP_BACKGROUND_RELEASE=2" "libdump: LIBDUMP_BACKGROUND_RELEASE=2 $B; using off" LIBDUMP_BACKGROUND_RELEASE=2
says "LIBDUMP_HEAPDUMP_ON_OOM=sure" "libdump: LIBDUMP_HEAPDUMP_ON_OOM=sure $B; using off" LIBDUMP_HEAPDUMP_ON_OOM=sure
says "LIBDUMP_HEAPDUMP_SIGNAL=SEGV" "libdump: LIBDUMP_HEAPDUMP_SIGNAL=SEGV is reserved for crashes; ignored" \
  LIBDUMP_HEAPDUMP_SIGNAL=SEGV
says "LIBDUMP_HEAPDUMP_SIGNAL=KILL" "libdump: LIBDUMP_HEAPDUMP_SIGNAL=KILL cannot be caught; ignored" \
  LIBDUMP_HEAPDUMP_SIGNAL=KILL
says "LIBDUMP_HEAPDUMP_SIGNAL=nope" "libdump: LIBDUMP_HEAPDUMP_SIGNAL=nope $S; ignored" LIBDUMP_HEAPDUMP_SIGNAL=nope
says "LIBDUMP_HEAPDUMP_SIGNAL = the stop signal" \
  "libdump: LIBDUMP_HEAPDUMP_SIGNAL=RTMIN+4 is libdump's stop-the-world signal (LIBDUMP_STOP_SIGNAL); ignored" \
  LIBDUMP_HEAPDUMP_SIGNAL=RTMIN+4
says "LIBDUMP_STOP_SIGNAL=abc" "libdump: LIBDUMP_STOP_SIGNAL=abc $S; using SIGRTMIN+4" LIBDUMP_STOP_SIGNAL=abc
says "LIBDUMP_HEAPDUMP_ZSTD=maybe (read when dumps on signal are on)" \
  "libdump: LIBDUMP_HEAPDUMP_ZSTD=maybe $B; using off" LIBDUMP_HEAPDUMP_ZSTD=maybe LIBDUMP_HEAPDUMP_SIGNAL=USR2
says "LIBDUMP_HEAPDUMP_ZSTD=maybe, read by dumps on signal and on OOM: one line" \
  "libdump: LIBDUMP_HEAPDUMP_ZSTD=maybe $B; using off" LIBDUMP_HEAPDUMP_ZSTD=maybe LIBDUMP_HEAPDUMP_SIGNAL=USR2 \
  LIBDUMP_HEAPDUMP_ON_OOM=1

# The effect of the spellings: threads named by the runtime, and a dump that
# is compressed or not.
has_thread() { grep -qx "$2" /proc/"$1"/task/*/comm 2>/dev/null; }
# Whether the process has a handler for SIGUSR2 (bit 12 - 1 of SigCgt).
catches_usr2() {
  mask=$(awk '/^SigCgt:/ {print $2}' /proc/"$1"/status 2>/dev/null)
  [ -n "$mask" ] && [ $(( 0x$mask & 0x800 )) -ne 0 ]
}
# Waits (up to 10 s, for a loaded machine) for the thread to appear.
gets_thread() {
  for _ in $(seq 100); do has_thread "$1" "$2" && return 0; sleep 0.1; done
  return 1
}
# Starts `sleep` with the variables; its pid in $pid once the runtime is loaded.
start() {
  env "$@" LD_PRELOAD="$lib" sleep 30 2> "$work/err" &
  pid=$!
  for _ in $(seq 100); do grep -q libdump.so /proc/$pid/maps 2>/dev/null && break; sleep 0.1; done
  sleep 0.5  # a thread the constructors would start has started by now
}
start LIBDUMP_BACKGROUND_RELEASE=true
check "LIBDUMP_BACKGROUND_RELEASE=true starts the release thread" "gets_thread $pid libdump-release"
kill $pid; wait $pid 2>/dev/null
start LIBDUMP_BACKGROUND_RELEASE=off
check "LIBDUMP_BACKGROUND_RELEASE=off starts none" "! has_thread $pid libdump-release"
kill $pid; wait $pid 2>/dev/null
start LIBDUMP_HEAPDUMP_SIGNAL=11
check "a refused signal (11, SIGSEGV) starts no dumper thread" "! has_thread $pid libdump-dumper"
kill $pid; wait $pid 2>/dev/null

for z in yes no; do
  start LIBDUMP_HEAPDUMP_SIGNAL=SIGUSR2 LIBDUMP_HEAPDUMP_ZSTD=$z LIBDUMP_HEAPDUMP_PATH="$work/$z.%p.dump"
  # Until the handler is installed, SIGUSR2 would kill sleep.
  for _ in $(seq 100); do catches_usr2 $pid && break; sleep 0.1; done
  kill -USR2 $pid
  for _ in $(seq 100); do [ -f "$work/$z.$pid.dump" ] && break; sleep 0.1; done
  kill $pid; wait $pid 2>/dev/null
  magic=$(head -c 4 "$work/$z.$pid.dump" 2>/dev/null | od -An -tx1 | tr -d ' \n')
  if [ $z = yes ]; then
    check "LIBDUMP_HEAPDUMP_ZSTD=yes: the dump on SIGUSR2 is zstd" "[ '$magic' = 28b52ffd ]"
  else
    check "LIBDUMP_HEAPDUMP_ZSTD=no: the dump on SIGUSR2 is plain" "[ '$magic' = 676f312e ]"
  fi
done
exit $fail
