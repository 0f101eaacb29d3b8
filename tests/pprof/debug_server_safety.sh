#!/bin/bash
# /debug/pprof must not endanger the process it serves: idle-connection
# floods (also with the thread limit reached) cost it no threads and never
# kill it; 10 concurrent heap dumps keep its RSS bounded (one dump at a
# time, sent from a file outside the heap); only GET and HEAD, only for its
# own Host; /debug/pprof redirects with a Location; a request must arrive
# within the read deadline; the listening socket does not survive exec, nor
# stay in a forked child. Only 127.0.0.1.
#   debug_server_safety.sh LIBDUMP_SO HOST_PROGRAM WORKDIR
set -u
RT=$1
PROG=$2
D=$3
HERE=$(dirname "$0")
rm -rf "$D"
mkdir -p "$D"
chmod 777 "$D"
fail=0
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT
say_fail() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# wait_serving ERRFILE [NTH]: the NTH "serving" address written to ERRFILE.
wait_serving() {
  local a=
  for _ in $(seq 200); do
    a=$(sed -n 's|^libdump: serving http://\(127\.0\.0\.1:[0-9]*\)/debug/pprof/$|\1|p' "$1" | sed -n "${2:-1}p")
    [ -n "$a" ] && break
    sleep 0.1
  done
  echo "$a"
}
code() { curl -s -o "$D/body" -w '%{http_code}' --max-time 60 "$@"; }
kb() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }

# --- A host with 64 MB of live blocks ---
LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=127.0.0.1:0 "$PROG" hold 64 300 >"$D/out" 2>"$D/err" &
pid=$!
pids+=($pid)
addr=$(wait_serving "$D/err")
[ -n "$addr" ] || { echo "FAIL: no 'serving' line: $(cat "$D/err")"; exit 1; }
for _ in $(seq 300); do grep -q ready "$D/out" && break; sleep 0.1; done
U=http://$addr/debug/pprof
port=${addr##*:}

got=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://$addr/debug/pprof")
[ "$got" = "301 http://$addr/debug/pprof/" ] && ok "/debug/pprof: $got" || say_fail "/debug/pprof: '$got'"

for m in POST DELETE PUT PATCH; do
  c=$(code -X "$m" "$U/heapdump")
  [ "$c" = 405 ] && ok "$m heapdump: 405" || say_fail "$m heapdump: $c"
done
c=$(code -H 'Content-Type: text/plain' --data-binary 'x' "$U/profile?seconds=1")
[ "$c" = 405 ] && ok "cross-origin-style POST to profile: 405" || say_fail "POST profile: $c"
for h in "attacker.example" "attacker.example:$port" "192.0.2.1:$port" "localhost.attacker.example"; do
  c=$(code -H "Host: $h" "$U/cmdline")
  [ "$c" = 403 ] && ok "Host: $h: 403" || say_fail "Host: $h: $c"
done
for h in "localhost:$port" "127.0.0.1:$port" "[::1]:$port" "$addr"; do
  c=$(code -H "Host: $h" "$U/cmdline")
  [ "$c" = 200 ] && ok "Host: $h: 200" || say_fail "Host: $h: $c"
done
c=$(code -I "$U/heapdump")
[ "$c" = 200 ] && ok "HEAD heapdump: 200 (no dump)" || say_fail "HEAD heapdump: $c"

# Ten heap dumps at once: one at a time (the others 503), none held in the
# heap, so the host's peak RSS grows by far less than one dump.
hwm0=$(kb $pid VmHWM)
for i in $(seq 10); do
  curl -s -o "$D/dump.$i" -w '%{http_code}\n' --max-time 120 "$U/heapdump" >"$D/code.$i" &
done
wait_curls=$(jobs -p | grep -v "^$pid$")
for j in $wait_curls; do wait "$j"; done
hwm1=$(kb $pid VmHWM)
n200=0; n503=0; size=0
for i in $(seq 10); do
  case $(cat "$D/code.$i") in
    200) n200=$((n200 + 1)); size=$(stat -c %s "$D/dump.$i");;
    503) n503=$((n503 + 1));;
    *) say_fail "heapdump $i: $(cat "$D/code.$i")";;
  esac
done
grow=$(( (hwm1 - hwm0) / 1024 ))
echo "10 concurrent heap dumps: $n200 x 200, $n503 x 503; a dump is $((size >> 20)) MB; peak RSS $((hwm0 >> 10)) -> $((hwm1 >> 10)) MB"
[ "$n200" -ge 1 ] && [ $((n200 + n503)) = 10 ] || say_fail "heap dumps: $n200 x 200, $n503 x 503"
[ "$size" -gt $((64 << 20)) ] || say_fail "a heap dump of 64 MB of blocks is $size bytes"
[ "$grow" -lt 32 ] && ok "peak RSS grew by $grow MB (< 32)" || say_fail "peak RSS grew by $grow MB during 10 heap dumps"
rm -f "$D"/dump.*

# An idle flood: no thread more, the excess answered 503 at once, the server
# answers once the flood is gone.
threads0=$(ls /proc/$pid/task | wc -l)
python3 "$HERE/idle_flood.py" 127.0.0.1 "$port" 300 4 >"$D/flood" &
flood=$!
sleep 2.5
threads1=$(ls /proc/$pid/task | wc -l)
wait $flood
echo "idle flood of 300: $(cat "$D/flood"); threads $threads0 -> $threads1"
[ "$threads1" -le "$threads0" ] && ok "no thread per connection" || say_fail "threads $threads0 -> $threads1 under the flood"
read -r _ answered _ open _ refused <"$D/flood"
[ "$answered" -ge 250 ] && ok "$answered of 300 idle connections answered 503 at once" ||
  say_fail "only $answered idle connections answered 503 ($open left open, $refused refused)"
kill -0 $pid 2>/dev/null && ok "host alive after the flood" || say_fail "host died in the flood"
c=$(code "$U/")
[ "$c" = 200 ] && ok "index after the flood: 200" || say_fail "index after the flood: $c"

# A client that never finishes its request is dropped at the read deadline.
start=$(date +%s)
python3 - "$port" <<'PY' >"$D/slow"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /debug/pprof/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
s.settimeout(60)
try:
    print("closed" if s.recv(100) == b"" else "answered")
except socket.timeout:
    print("still open")
PY
took=$(( $(date +%s) - start ))
[ "$(cat "$D/slow")" = closed ] && [ "$took" -le 30 ] && ok "an unfinished request closed after $took s" ||
  say_fail "an unfinished request: $(cat "$D/slow") after $took s"
kill $pid; wait $pid 2>/dev/null

# --- The thread limit reached: as uid 64999 (no other test uses it), with RLIMIT_NPROC a few threads
# above what the host starts with. Root only (root ignores RLIMIT_NPROC).
if [ "$(id -u)" = 0 ]; then
  prlimit --nproc=12 setpriv --reuid=64999 --regid=64999 --clear-groups \
    env LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=127.0.0.1:0 "$PROG" hold 1 300 >"$D/out2" 2>"$D/err2" &
  pid=$!
  pids+=($pid)
  addr=$(wait_serving "$D/err2" 2)
  [ -n "$addr" ] || addr=$(wait_serving "$D/err2")
  sleep 0.5
  python3 "$HERE/idle_flood.py" 127.0.0.1 "${addr##*:}" 100 2 >"$D/flood2"
  if kill -0 $pid 2>/dev/null && [ "$(code "http://$addr/debug/pprof/")" = 200 ]; then
    ok "100 idle connections at the thread limit: host alive and serving ($(cat "$D/flood2"))"
  else
    say_fail "at the thread limit: host $(kill -0 $pid 2>/dev/null && echo alive || echo dead): $(tail -3 "$D/err2")"
  fi
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
else
  echo "SKIP: the thread-limit flood needs root (RLIMIT_NPROC for another user)"
fi

# --- exec: the listening socket is closed on exec; the new image serves its own.
LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=127.0.0.1:0 sh -c 'sleep 1; exec sleep 60' 2>"$D/err3" &
pid=$!
pids+=($pid)
first=$(wait_serving "$D/err3" 1)
second=$(wait_serving "$D/err3" 2)
if [ -z "$first" ] || [ -z "$second" ]; then
  say_fail "exec: serving lines: $(cat "$D/err3")"
else
  r=$(python3 -c "
import socket, sys
try:
    socket.create_connection(('127.0.0.1', ${first##*:}), timeout=5).close(); print('accepted')
except ConnectionRefusedError:
    print('refused')")
  [ "$r" = refused ] && ok "after exec the old port $first is free" || say_fail "after exec the old port $first: $r"
  [ "$(code "http://$second/debug/pprof/")" = 200 ] && ok "the exec'd image serves $second" || say_fail "no answer on $second"
fi
kill $pid 2>/dev/null; wait $pid 2>/dev/null

# --- fork: the child does not keep the parent's socket.
LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=127.0.0.1:0 "$PROG" fork 60 >"$D/out4" 2>"$D/err4" &
pid=$!
pids+=($pid)
addr=$(wait_serving "$D/err4")
for _ in $(seq 100); do grep -q '^child' "$D/out4" && break; sleep 0.1; done
child=$(sed -n 's/^child //p' "$D/out4")
pids+=($child)
kill -9 $pid; wait $pid 2>/dev/null
r=$(python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', ${addr##*:}), timeout=5).close(); print('accepted')
except ConnectionRefusedError:
    print('refused')")
[ "$r" = refused ] && ok "a forked child does not hold the parent's port" || say_fail "the parent's port with only its child alive: $r"
kill -9 "$child" 2>/dev/null

# --- Loopback spellings serve without the non-local warning.
for a in '[::ffff:127.0.0.1]:0' '127.0.0.1:0'; do
  LD_PRELOAD="$RT" LIBDUMP_PPROF_ADDR=$a "$PROG" hold 1 0 2>"$D/err5" >/dev/null
  grep -q warning "$D/err5" && say_fail "$a: $(cat "$D/err5")" || ok "$a: no warning"
done
exit $fail
