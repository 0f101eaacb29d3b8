#!/bin/bash
# Ctrl-C while heapview indexes a dump, with its arrays in RAM and under a
# small --memory (arrays in files): the index directory holds nothing
# afterwards (no index, no temporary, no array file) and the next open
# indexes the dump again instead of trusting anything; an open that completes
# writes an index that the one after it reads.
#   interrupt_test.sh HEAPVIEW MAKE_HEAPVIEW_DUMP WORKDIR
set -u
tool=$1 make=$2 work=$3
. "$(dirname "$0")/lib.sh"
rm -rf "$work" && mkdir -p "$work/idx"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
"$make" "$work/chain.dump" --chain 1500000 || exit 1

# Job control: a background job of a script otherwise starts with SIGINT
# ignored, which a Ctrl-C at a terminal never meets.
set -m
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null' EXIT
serve() {  # args...: starts heapview on the dump, its output in $work/out and $work/err
  "$tool" --port 0 --index-dir "$work/idx" "$@" "$work/chain.dump" > "$work/out" 2> "$work/err" &
  pid=$!
}
stop() {  # Ctrl-C; sets status
  kill -INT $pid
  wait $pid
  status=$?
  pid=
}

for memory in unlimited 8M; do
  serve --memory $memory
  wait_for "$work/err" 'indexing .*: references'
  stop
  if grep -q serving "$work/out"; then
    # Indexing ended before the signal came: nothing here can be checked.
    echo "SKIP: indexing finished before Ctrl-C (--memory $memory)"
    exit 77
  fi
  check "--memory $memory: Ctrl-C while reading references stops it (status 130)" "[ $status -eq 130 ]"
  check "--memory $memory: nothing is left in the index directory" "[ -z \"\$(ls -A '$work/idx')\" ]"
done

# While the index is written: a short window, so one that finished first is
# only noted (its index is then complete, and removed for what follows).
serve
wait_for "$work/err" 'writing the index'
stop
if grep -q serving "$work/out"; then
  echo "note: the index was written before Ctrl-C"
  rm -f "$work/idx"/*
else
  check "Ctrl-C while writing the index leaves nothing in the index directory" "[ -z \"\$(ls -A '$work/idx')\" ]"
fi

serve --memory 8M
wait_for "$work/out" serving
check "after Ctrl-C the next open indexes the dump again" \
  "grep -q 'chain.dump: 1500000 objects, .* indexed in' '$work/err' && ! grep -q 'read from its index' '$work/err'"
check "under --memory 8M the large arrays are files" "grep -q 'arrays in files, budget 8 MiB' '$work/err'"
stop
check "a completed open leaves one index" "[ \$(ls -A '$work/idx' | grep -c '\\.ldindex\$') -eq 1 ] && [ \$(ls -A '$work/idx' | wc -l) -eq 1 ]"
serve
wait_for "$work/out" serving
check "the open after it reads that index" "grep -q 'read from its index' '$work/err'"
stop
exit $fail
