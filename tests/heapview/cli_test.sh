#!/bin/bash
# heapview's command line and server: one-line errors and exit 1 before
# serving on bad input, usage errors, the URL line, pages and 404s over HTTP,
# a stalled connection that does not block others, retained sizes of the
# converted hprof equal to VisualVM's, Ctrl-C.
#   cli_test.sh HEAPVIEW GRAPH.dump GRAPH.hprof WORKDIR
set -u
tool=$1 dump=$2 hprof=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

"$tool" --help > "$work/help" 2>&1
check "--help exits 0" "[ $? -eq 0 ] && grep -q 'usage: heapview' '$work/help'"
"$tool" > /dev/null 2>&1
check "no FILE: exit 2" "[ $? -eq 2 ]"
"$tool" --port 70000 "$dump" > /dev/null 2>&1
check "port out of range: exit 2" "[ $? -eq 2 ]"
"$tool" "$work/missing" > "$work/out" 2> "$work/err"
check "missing file: exit 1, one line, nothing served" \
  "[ $? -eq 1 ] && [ \$(wc -l < '$work/err') -eq 1 ] && grep -q '^$work/missing: cannot open: ' '$work/err' && [ ! -s '$work/out' ]"
size=$(wc -c < "$dump")
head -c $((size - 20)) "$dump" > "$work/cut.dump"
"$tool" -q "$work/cut.dump" > "$work/out" 2> "$work/err"
check "truncated dump: exit 1, one line FILE:OFFSET: kind K (name): ..." \
  "[ $? -eq 1 ] && [ \$(wc -l < '$work/err') -eq 1 ] && grep -Eq '^$work/cut.dump:[0-9]+: kind [0-9]+ \\([a-z]+\\): ' '$work/err' && [ ! -s '$work/out' ]"
size=$(wc -c < "$hprof")
head -c $((size - 30)) "$hprof" > "$work/cut.hprof"
"$tool" -q "$work/cut.hprof" > "$work/out" 2> "$work/err"
check "truncated hprof: exit 1, one line FILE:OFFSET: ..." \
  "[ $? -eq 1 ] && [ \$(wc -l < '$work/err') -eq 1 ] && grep -Eq '^$work/cut.hprof:[0-9]+: ' '$work/err' && [ ! -s '$work/out' ]"
printf 'JAVA PROFILE 1.0.2\000\000\000\000\010\000\000\000\000\000\000\000\000\001\000\000\000\000\377\377\377\377' > "$work/giant.hprof"
"$tool" -q "$work/giant.hprof" > "$work/out" 2> "$work/err"
check "hprof record longer than the file: exit 1, one line" \
  "[ $? -eq 1 ] && grep -q '^$work/giant.hprof:31: UTF8: length 4294967295 runs past the end of the file' '$work/err'"

# Serving: --port 0 picks a free port; the URL is on stdout.
pid=
# A failing check must not leave a server behind.
trap '[ -n "$pid" ] && kill $pid 2>/dev/null' EXIT
start() {
  "$@" > "$work/server.out" 2> "$work/server.err" &
  pid=$!
  url=
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^heapview: serving \(http:[^ ]*\) .*/\1/p' "$work/server.out")
    [ -n "$url" ] && break
    sleep 0.1
  done
}
start "$tool" --port 0 "$hprof"
check "prints the URL on 127.0.0.1" "echo '$url' | grep -Eq '^http://127\\.0\\.0\\.1:[0-9]+/$'"
check "prints a progress line while indexing" "grep -q 'indexing $hprof: references' '$work/server.err'"
code() { curl -s -o "$work/body" -w '%{http_code}' --max-time 10 "$url$1"; }
check "histogram page: 200" "[ \$(code histogram) = 200 ] && grep -q '>Node</a>' '$work/body'"
check "missing object: 404 page" "[ \$(code object/0x77777) = 404 ] && grep -q 'No object 0x77777' '$work/body'"
check "unknown page: 404" "[ \$(code nothing/here) = 404 ]"

# A connection that sends half a request holds no thread: others are served.
exec 3<>/dev/tcp/127.0.0.1/$(echo "$url" | sed 's/.*:\([0-9]*\)\/$/\1/')
printf 'GET / HTTP/1.1\r\nHost: x\r\n' >&3
check "a stalled connection does not block another request" "[ \$(code dominators) = 200 ]"
# Twenty requests at once, each answered.
for k in $(seq 1 20); do curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "${url}object/0x1300" > "$work/par.$k" & done
wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null
check "twenty concurrent requests: all 200" "[ \$(cat '$work'/par.* | grep -c '^200\$') -eq 20 ]"
exec 3>&-

# Retained sizes of the converted hprof, as VisualVM's heap library computes
# them (../shared/tools/hprof-check --retained, recorded in testdata/README.md,
# graph H): D 112, G 96, A 48, C 40, B 24, H 24, E 16, F (byte[]) 88.
for pair in 0x1300=112 0x1600=96 0x1000=48 0x1200=40 0x1100=24 0x1700=24 0x1400=16 0x1500=88; do
  id=${pair%=*} want=${pair#*=}
  curl -s --max-time 10 "${url}api/object/$id" > "$work/obj.json"
  check "retained size of $id is VisualVM's $want" "grep -q '\"retained\": $want,' '$work/obj.json'"
done

kill -INT $pid
wait $pid
check "Ctrl-C: exit 0" "[ $? -eq 0 ] && grep -q 'heapview: stopped' '$work/server.err'"

# jhat's spellings, and --bind to a non-loopback address warns.
start "$tool" -port 0 -baseline "$dump" --bind 0.0.0.0 "$dump"
check "jhat's -port and -baseline, --bind 0.0.0.0 warns" \
  "[ -n '$url' ] && grep -q 'warning: listening on 0.0.0.0' '$work/server.err'"
diff_code=$(code diff)
check "baseline: the diff page answers" "[ '$diff_code' = 200 ]"
[ "$diff_code" = 200 ] || { echo "  $url""diff: HTTP $diff_code:"; head -c 300 "$work/body"; cat "$work/server.out" "$work/server.err"; }
kill -TERM $pid
wait $pid
check "SIGTERM: exit 0" "[ $? -eq 0 ]"
exit $fail
