#!/bin/bash
# What heapview serves while a dump opens. It listens before the open (a port
# in use fails at once, before any indexing) and, until the graph is
# published, answers every page with the waiting page (phase, objects done of
# the total; it reloads itself), /progress.json with the same snapshot and
# the JSON API with 503 and Retry-After; then the real pages. The open is
# held mid-phase by --hold-open FILE (a test-only option) until the test
# creates FILE, so nothing here depends on the machine's speed. An input that
# cannot be opened fails before the listening; --series numbers its files.
# With `browser`, chromium sees the page and sees it become the summary
# itself.
#   waiting_test.sh HEAPVIEW MAKE_HEAPVIEW_DUMP WORKDIR [browser]
set -u
tool=$1 make=$2 work=$3 mode=${4:-curl}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rm -rf "$work" && mkdir -p "$work/idx"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
[ "$mode" = browser ] && need_puppeteer
# Past 2^16 objects, so that a phase counting objects reports a count.
"$make" "$work/chain.dump" --chain 200000 || exit 1

set -m  # a background job gets SIGINT as from a terminal
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null' EXIT
start() {  # args... DUMP: heapview held at its first count; sets pid and url
  rm -f "$work/go"
  "$tool" --port 0 --hold-open "$work/go" "$@" > "$work/out" 2> "$work/err" &
  pid=$!
  wait_for "$work/err" '^heapview: http:[^ ]* shows the progress '
  url=$(sed -n 's/^heapview: \(http:[^ ]*\) shows the progress .*/\1/p' "$work/err")
}
# Polls /progress.json until the open is held at its first count (up to 120 s).
wait_held() {
  for _ in $(seq 1 1200); do
    curl -s --max-time 10 "${url}progress.json" > "$work/progress.json"
    # (a slow build may be caught reading the file: bytes, not yet held)
    grep -q '"done": [1-9]' "$work/progress.json" && grep -q '"unit": "objects"' "$work/progress.json" && return 0
    kill -0 $pid 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
code() { curl -s -D "$work/headers" -o "$work/body" -w '%{http_code}' --max-time 10 "$url$1"; }

start --no-index-cache "$work/chain.dump"
check "listens before the open and says where on stderr" "[ -n '$url' ]"
if [ "$mode" = browser ]; then
  wait_held
  node "$here/browser/waiting.mjs" "$url" "$work/waiting.png" "$work/go" || fail=1
else
  check "the open reports a count of objects" wait_held
  check "nothing says serving before the graph is ready" "! grep -q serving '$work/out'"
  phase=$(sed -n 's/^  "phase": "\(.*\)",$/\1/p' "$work/progress.json")
  check "/progress.json: opening, a phase, done of a total in objects" \
    "grep -q '\"state\": \"opening\"' '$work/progress.json' && [ -n '$phase' ] && grep -q '\"unit\": \"objects\"' '$work/progress.json' && grep -q '\"total\": [1-9]' '$work/progress.json'"
  check "/: the waiting page (200), with the phase and the count, reloading itself" \
    "[ \$(code '') = 200 ] && grep -q '<h1>Opening $work/chain.dump</h1>' '$work/body' && grep -qF '>$phase<' '$work/body' && grep -Eq 'id=\"done\">[0-9,]+ of [0-9,]+ objects' '$work/body' && grep -q 'http-equiv=\"refresh\"' '$work/body'"
  check "any other page: the waiting page too" "[ \$(code 'histogram?sort=retained') = 200 ] && grep -q '<h1>Opening ' '$work/body'"
  check "the JSON API: 503 with Retry-After" \
    "[ \$(code api/histogram) = 503 ] && grep -qi '^Retry-After: [0-9]' '$work/headers' && grep -q '\"state\": \"opening\"' '$work/body'"
  check "a Host not allowed is refused while waiting too" \
    "[ \$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Host: attacker.example' '$url') = 403 ]"
  port=$(echo "$url" | sed 's/.*:\([0-9]*\)\/$/\1/')
  timeout 60 "$tool" --port "$port" "$work/chain.dump" > "$work/out2" 2> "$work/err2"
  check "a second heapview on the same port fails at once, before indexing" \
    "[ $? -eq 1 ] && grep -q 'cannot listen on 127.0.0.1:$port' '$work/err2' && ! grep -q indexing '$work/err2'"
  # On that taken port, an input that cannot be opened is reported before
  # any listening: its one line, not "cannot listen".
  for opt in --baseline --series; do
    timeout 60 "$tool" --port "$port" $opt "$work/missing.dump" "$work/chain.dump" > "$work/out2" 2> "$work/err2"
    check "$opt missing.dump: exit 1, one line naming it, before listening" \
      "[ $? -eq 1 ] && [ \$(wc -l < '$work/err2') -eq 1 ] && grep -q '^$work/missing.dump: ' '$work/err2'"
  done
  touch "$work/go"
fi
wait_for "$work/out" serving 120
check "once open: serving on stdout" "grep -q '^heapview: serving $url ' '$work/out'"
if [ "$mode" != browser ]; then
  check "/: the summary" "[ \$(code '') = 200 ] && grep -q '<h1>Heap $work/chain.dump</h1>' '$work/body' && ! grep -q refresh '$work/body'"
  check "/api/histogram: 200" "[ \$(code api/histogram) = 200 ]"
  check "/progress.json: ready" "[ \$(code progress.json) = 200 ] && grep -q '\"state\": \"ready\"' '$work/body'"
fi
kill -INT $pid
wait $pid
check "Ctrl-C: exit 0" "[ $? -eq 0 ]"
pid=

if [ "$mode" != browser ]; then
  # --series OLD NEW: the files are numbered across the series. NEW, a dump of
  # a few objects, never reports a count, so the open is held in OLD, the
  # second file.
  "$make" "$work/small.dump" || exit 1
  start --no-index-cache --series "$work/chain.dump" "$work/small.dump"
  check "--series OLD NEW: held in OLD, file 2 of 2" \
    "wait_held && grep -q '\"file\": \"$work/chain.dump\"' '$work/progress.json' && grep -q '\"file_no\": 2,' '$work/progress.json' && grep -q '\"files\": 2,' '$work/progress.json'"
  check "--series OLD NEW: the waiting page says 2 of 2" "[ \$(code '') = 200 ] && grep -qF '$work/chain.dump (2 of 2)' '$work/body'"
  touch "$work/go"
  check "--series OLD NEW: serving once both are open" "wait_for '$work/out' serving 120"
  kill -INT $pid
  wait $pid
  check "--series OLD NEW: Ctrl-C: exit 0" "[ $? -eq 0 ]"
  pid=

  # Ctrl-C while the page waits: the open ends as before the server came
  # first (status 130) and leaves nothing in the index directory.
  start --index-dir "$work/idx" "$work/chain.dump"
  wait_held
  kill -INT $pid
  wait $pid
  status=$?
  pid=
  check "Ctrl-C while waiting: status 130, nothing in the index directory" \
    "[ $status -eq 130 ] && [ -z \"\$(ls -A '$work/idx')\" ]"
fi
exit $fail
