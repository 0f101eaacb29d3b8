#!/bin/bash
# heapview when descriptors run out (ulimit -n 64, 100 slow clients): the
# accept loop backs off instead of spinning, sheds the connections idle
# longest, and a new client is answered during the flood and after it.
# Also: --threads is bounded, only GET/HEAD for its own Host, and the IPv6
# spellings of loopback get no non-local warning. Only 127.0.0.1 and ::1.
#   exhaustion_test.sh HEAPVIEW GRAPH.dump WORKDIR
set -u
tool=$1 dump=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null' EXIT

timeout 20 "$tool" --threads 40000 "$dump" >/dev/null 2>"$work/err"
check "--threads 40000: usage error, exit 2" "[ $? -eq 2 ] && grep -q 'threads must be from 1 to 64' '$work/err'"
timeout 20 "$tool" --threads 0 "$dump" >/dev/null 2>&1
check "--threads 0: exit 2" "[ $? -eq 2 ]"
"$tool" --help | grep -q -- '--threads N .*1 to 64'
check "--help gives the bound" "[ $? -eq 0 ]"

start() {
  url=
  "$@" > "$work/server.out" 2> "$work/server.err" &
  pid=$!
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^heapview: serving \(http:[^ ]*\) .*/\1/p' "$work/server.out")
    [ -n "$url" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
}
stop() { kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; pid=; }
code() { curl -s -o "$work/body" -w '%{http_code}' --max-time 10 "$@"; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

start bash -c "ulimit -n 64 && exec '$tool' -q --threads 2 --port 0 '$dump'"
check "serves with 64 descriptors" "[ -n '$url' ]"
port=$(echo "$url" | sed 's/.*:\([0-9]*\)\/$/\1/')
check "POST: 405" "[ \$(code -X POST '${url}histogram') = 405 ]"
check "DELETE: 405" "[ \$(code -X DELETE '${url}histogram') = 405 ]"
check "a foreign Host: 403" "[ \$(code -H 'Host: attacker.example:$port' '${url}histogram') = 403 ]"
check "Host localhost: 200" "[ \$(code -H 'Host: localhost:$port' '${url}histogram') = 200 ]"

# 100 clients that send half a request and stall, held 6 s.
python3 - "$port" <<'PY' > "$work/flood" &
import socket, sys, time
conns = []
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        conns.append(s)
    except OSError:
        pass
print(len(conns), flush=True)
time.sleep(6)
PY
flood=$!
sleep 2
t0=$(ticks)
sleep 2
t1=$(ticks)
cpu=$(( (t1 - t0) * 100 / $(getconf CLK_TCK) / 2 ))
echo "heapview CPU during the flood: $cpu %"
check "no spinning accept loop under EMFILE (CPU $cpu % < 10 %)" "[ $cpu -lt 10 ]"
start_s=$(date +%s)
c=$(code "${url}histogram")
took=$(( $(date +%s) - start_s ))
check "a new client is answered during the flood ($c in $took s)" "[ '$c' = 200 ]"
wait $flood
check "answered after the flood" "[ \$(code '${url}histogram') = 200 ]"
stop

# Loopback in IPv6 spellings: no warning (where IPv6 is there to bind).
for a in ::ffff:127.0.0.1 0:0:0:0:0:0:0:1; do
  start "$tool" -q --port 0 --bind "$a" "$dump"
  check "--bind $a: no non-local warning" "! grep -q warning '$work/server.err'"
  stop
done
exit $fail
