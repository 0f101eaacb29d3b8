#!/bin/sh
# /debug/pprof/ of a program preloaded with libdump.so and
# LIBDUMP_PPROF_ADDR=127.0.0.1:0, read by the real client, `go tool pprof`
# (heap and allocs in both forms and as deltas, a 1 s CPU profile, block,
# mutex, threadcreate), and by curl for the rest: the index, one CPU profile
# at a time, 400s with a reason for bad parameters, 404 for unknown names,
# cmdline, symbol, heapdump, the flight recorder's window. The server's own
# allocations and CPU time stay out of the heap and CPU profiles.
#   debug_server.sh LIBDUMP_SO LOCK_PROGRAM WORKDIR
set -eu
RT=$1
PROG=$2
D=$3
. "$(dirname "$0")/go_workdir.sh"
unset LIBDUMP_PROFILE_ROOT || true
fail=0
say_fail() { echo "FAIL: $*"; fail=1; }
# The programs' stderr files exist before they start: the loops below read
# them at once, and a sed on a missing file would end the script (set -e)
# when the shell that starts the program is scheduled late.
: > "$D/err"
: > "$D/err2"
# Every allocation sampled: the program's few (so that heap?debug=1 has
# both in-use and freed objects, whatever the timing) and the server's own
# (the symbol tables each request loads), which must not show.
LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=127.0.0.1:0 LIBDUMP_BLOCKPROFILE_RATE=10000 LIBDUMP_MUTEXPROFILE_FRACTION=1 \
  LIBDUMP_MEMPROFILE_RATE=1 LIBDUMP_THREADCREATEPROFILE="$D/threadcreate.pprof" \
  "$PROG" loop 120 2>"$D/err" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
addr=
for i in $(seq 100); do
  addr=$(sed -n 's|^libdump: serving http://\(127\.0\.0\.1:[0-9]*\)/debug/pprof/$|\1|p' "$D/err")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "FAIL: no 'serving' line: $(cat "$D/err")"; exit 1; }
U=http://$addr/debug/pprof
check() {  # check DESCRIPTION PATTERN pprof-args...
  desc=$1; pat=$2; shift 2
  if out=$(go tool pprof -symbolize=none "$@" 2>&1) && printf '%s\n' "$out" | grep -Eq "$pat"; then
    echo "ok: $desc"
  else
    say_fail "$desc: no /$pat/ in go tool pprof $*"; printf '%s\n' "$out" | head -20
  fi
}
status() {  # status WANT URL [curl args]: the status code and the body's first line
  want=$1; url=$2; shift 2
  got=$(curl -s -o "$D/body" -w '%{http_code}' "$@" "$url") || true
  if [ "$got" = "$want" ]; then echo "ok: $url -> $got $(head -c 80 "$D/body" | head -1)"
  else say_fail "$url: status $got, want $want: $(head -c 200 "$D/body")"; fi
}
check "heap" "PeriodType: space bytes" -raw "$U/heap"
check "allocs" "PeriodType: space bytes" -raw "$U/allocs"
check "profile?seconds=1" "Type: cpu" -top "$U/profile?seconds=1"
check "block: LockWorker waited" "^ +0 +0% +[0-9.]+% +[0-9.]+(ms|s) .*LockWorker" -top -cum -sample_index=delay "$U/block"
check "mutex: LockWorker released" "^ +0 +0% +[0-9.]+% +[0-9.]+(ms|s) .*LockWorker" -top -cum -sample_index=delay "$U/mutex"
check "block?seconds=1 (delta): LockWorker waited" "^ +0 +0% +[0-9.]+% +[0-9.]+(ms|s) .*LockWorker" -top -cum -sample_index=delay "$U/block?seconds=1"
check "mutex?seconds=1 (delta)" "Duration: 1s" -top "$U/mutex?seconds=1"
check "goroutine (threads)" "PeriodType: goroutine count" -raw "$U/goroutine"
check "threads: the main thread waits in main" " main$" -traces "$U/threads"
# The workers, created by main through std::thread, under pthread_create.
check "threadcreate: LockWorker threads created by main" "pthread_create" -traces "$U/threadcreate"
check "threadcreate" "PeriodType: threadcreate count" -raw "$U/threadcreate"
check "heap?debug=1 (Go's legacy text)" "Type: inuse_space" -top "$U/heap?debug=1"
check "allocs?seconds=1 (delta)" "Duration: 1s" -top "$U/allocs?seconds=1"
check "heap?seconds=1 (delta)" "Duration: 1s" -top "$U/heap?seconds=1"

status 200 "$U/"
grep -q 'href="profile"' "$D/body" || say_fail "the index has no profile link"
# One CPU profile at a time: a second request while one runs is refused.
# The second is sent 0.7 s after the first; on a loaded machine the first
# may not have reached the server by then (the second then runs, and the
# first is the one refused): the pair is sent again, waiting longer, up to
# three times.
overlap=
for wait_s in 0.7 1.5 3; do
  curl -s -o "$D/first.pb.gz" -w '%{http_code}' "$U/profile?seconds=5" > "$D/first.code" &
  first=$!
  sleep $wait_s
  second=$(curl -s -o "$D/body" -w '%{http_code}' "$U/profile?seconds=1") || true
  wait $first
  if [ "$second" = 500 ] && [ "$(cat "$D/first.code")" = 200 ]; then overlap=1; break; fi
  echo "note: the first CPU profile answered $(cat "$D/first.code"), the second $second after ${wait_s} s: again"
done
if [ -n "$overlap" ]; then
  echo "ok: a second CPU profile while one runs -> 500"
  grep -q "cpu profiling already in use" "$D/body" || say_fail "second CPU profile: $(cat "$D/body")"
  go tool pprof -symbolize=none -raw "$D/first.pb.gz" >/dev/null 2>&1 || say_fail "the first CPU profile is unreadable"
else
  say_fail "no second CPU profile was refused while the first ran (last: $second: $(head -c 200 "$D/body"))"
fi
status 400 "$U/profile?seconds=abc"
grep -q "^seconds=abc: want an integer from 1 to 3600" "$D/body" || say_fail "no reason for seconds=abc"
status 400 "$U/profile?seconds=0"
status 400 "$U/heap?debug=2"
status 400 "$U/heap?seconds=5&debug=1"
status 400 "$U/allocs?seconds=0"
status 400 "$U/threadcreate?debug=2"
status 200 "$U/threadcreate?debug=1"
head -1 "$D/body" | grep -q "^threadcreate profile: total [0-9]" || say_fail "threadcreate?debug=1: $(head -3 "$D/body")"
grep -q "std::thread::_M_start_thread" "$D/body" || say_fail "threadcreate?debug=1 has no std::thread frame"
status 200 "$U/heap?debug=1"
head -1 "$D/body" | grep -Eq "^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/2$" ||
  say_fail "heap?debug=1: $(head -1 "$D/body")"
grep -q "^MAPPED_LIBRARIES:" "$D/body" || say_fail "heap?debug=1 has no mappings"
# Symbolized by the server's /symbol (go tool pprof's symbolz), as Go's.
check "heap?debug=1: main allocated" " main$" -symbolize=remote -traces "$U/heap?debug=1"
status 404 "$U/flightrecorder"
grep -q "no flight recorder runs" "$D/body" || say_fail "flightrecorder without a recorder: $(cat "$D/body")"
status 400 "$U/flightrecorder?format=svg"
status 400 "$U/block?seconds=x"
status 400 "$U/heapdump?zstd=2"
status 404 "$U/nosuch"
status 400 "$U/goroutine?debug=3"
status 200 "$U/threads?debug=2"
grep -Eq "^thread [0-9]+ \[[a-z ]+, [a-z_ 0-9]+\]: pprof_lock_prog" "$D/body" || say_fail "threads?debug=2: $(head -5 "$D/body")"
status 200 "$U/block?debug=1"
head -1 "$D/body" | grep -q "^--- contention:" || say_fail "block?debug=1: $(head -3 "$D/body")"
grep -q "LockWorker" "$D/body" || say_fail "block?debug=1 has no LockWorker"
cp "$D/body" "$D/block.txt"
check "block?debug=1 read as Go's legacy contention text" "Type: delay" -top "$D/block.txt"
status 400 "$U/mutex?debug=2"
status 200 "$U/goroutine?debug=1"
grep -q "^threads profile: total [0-9]" "$D/body" || say_fail "goroutine?debug=1: $(head -3 "$D/body")"
status 200 "$U/cmdline"
tr '\0' ' ' < "$D/body" | grep -q "lock_program loop 120" || say_fail "cmdline: $(tr '\0' ' ' < "$D/body")"
status 200 "$U/symbol"
grep -q "^num_symbols: 1" "$D/body" || say_fail "symbol: $(cat "$D/body")"
status 400 "$U/symbol" --data-binary "0xzz"
status 200 "$U/heapdump"
[ "$(wc -c < "$D/body")" -gt 1000 ] || say_fail "heapdump: $(wc -c < "$D/body") bytes"
status 200 "$U/heapdump?zstd=1"
[ "$(head -c 4 "$D/body" | od -An -tx1 | tr -d ' ')" = 28b52ffd ] || say_fail "heapdump?zstd=1 is not zstd"
# The server's own work: requests that symbolize (each loads the modules'
# symbol tables, every allocation sampled) while a CPU profile runs.
curl -s -o "$D/own-cpu.pb.gz" "$U/profile?seconds=2" &
cpu=$!
for i in 1 2 3 4 5 6; do
  curl -s -o /dev/null "$U/threads?debug=2"
  curl -s -o /dev/null "$U/heap?debug=1"
done
wait $cpu
own='samplers::\(anonymous namespace\)::(Serve|Handle|AcceptLoop)|boost::beast|ProfileSymbolizer'
for f in "$D/own-cpu.pb.gz" "$U/allocs"; do
  if out=$(go tool pprof -symbolize=none -traces "$f" 2>&1); then
    if printf '%s\n' "$out" | grep -Eq "$own"; then
      say_fail "the server's own work is in $f: $(printf '%s\n' "$out" | grep -E "$own" | sort | uniq -c | head -5)"
    else
      echo "ok: no server frames in $f"
    fi
  else
    say_fail "go tool pprof $f: $(printf '%s\n' "$out" | head -3)"
  fi
done
kill -TERM $pid
wait $pid || true
trap - EXIT
# The threadcreate profile written at the SIGTERM exit.
check "LIBDUMP_THREADCREATEPROFILE at exit" "PeriodType: threadcreate count" -raw "$D/threadcreate.pprof"

# The flight recorder's window, with a recorder running.
LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=127.0.0.1:0 LIBDUMP_FLIGHT_RECORDER=1 "$PROG" loop 60 2>"$D/err2" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
addr=
for i in $(seq 100); do
  addr=$(sed -n 's|^libdump: serving http://\(127\.0\.0\.1:[0-9]*\)/debug/pprof/$|\1|p' "$D/err2")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "FAIL: no 'serving' line: $(cat "$D/err2")"; exit 1; }
U=http://$addr/debug/pprof
sleep 1
status 200 "$U/flightrecorder"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ev=d["traceEvents"] if isinstance(d, dict) else d; assert len(ev) > 0' \
  "$D/body" || say_fail "flightrecorder: not Trace Event JSON with events: $(head -c 200 "$D/body")"
check "flightrecorder?format=pprof: the window's CPU samples" "PeriodType: cpu nanoseconds" -raw "$U/flightrecorder?format=pprof"
kill -TERM $pid
wait $pid || true
trap - EXIT
[ $fail = 0 ] && echo "ok: /debug/pprof/ serves go tool pprof and refuses what it should"
exit $fail
