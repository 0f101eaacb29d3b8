#!/bin/sh
# /debug/pprof/ of a program preloaded with libdump.so and
# LIBDUMP_PPROF_ADDR=127.0.0.1:0, read by the real client, `go tool pprof`
# (heap, a 1 s CPU profile, block, mutex), and by curl for the rest: the
# index, one CPU profile at a time, 400s with a reason for bad parameters,
# 404 for unknown names, cmdline, symbol, heapdump.
#   debug_server.sh LIBDUMP_SO LOCK_PROGRAM WORKDIR
set -eu
RT=$1
PROG=$2
D=$3
. "$(dirname "$0")/go_workdir.sh"
unset LIBDUMP_PROFILE_ROOT || true
fail=0
say_fail() { echo "FAIL: $*"; fail=1; }
LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=127.0.0.1:0 LIBDUMP_BLOCKPROFILE_RATE=10000 LIBDUMP_MUTEXPROFILE_FRACTION=1 \
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

status 200 "$U/"
grep -q 'href="profile"' "$D/body" || say_fail "the index has no profile link"
# One CPU profile at a time: a second request while one runs is refused.
curl -s -o "$D/first.pb.gz" "$U/profile?seconds=2" &
first=$!
sleep 0.7
status 500 "$U/profile?seconds=1"
grep -q "cpu profiling already in use" "$D/body" || say_fail "second CPU profile: $(cat "$D/body")"
wait $first
go tool pprof -symbolize=none -raw "$D/first.pb.gz" >/dev/null 2>&1 || say_fail "the first CPU profile is unreadable"
status 400 "$U/profile?seconds=abc"
grep -q "^seconds=abc: want an integer from 1 to 3600" "$D/body" || say_fail "no reason for seconds=abc"
status 400 "$U/profile?seconds=0"
status 400 "$U/heap?debug=2"
status 400 "$U/heap?seconds=5"
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
kill -TERM $pid
wait $pid || true
trap - EXIT
[ $fail = 0 ] && echo "ok: /debug/pprof/ serves go tool pprof and refuses what it should"
exit $fail
