#!/bin/sh
# Builds tests/godump/producer.go with the installed Go, has it dump its heap
# with known contents, and checks readdump's counts against them and that it
# validates.
#   go_producer_check.sh READDUMP WORKDIR
set -eu
R=$1
D=$2
. "$(dirname "$0")/../pprof/go_workdir.sh"
N=37 G=4 F=5
(cd "$D" && GO111MODULE=off go build -o "$D/producer" "$(cd "$(dirname "$0")" && pwd)/producer.go")
"$D/producer" "$D/heap.dump" $N $G $F
fail=0
expect() {  # expect DESCRIPTION WANT GOT
  if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1: want $2, got $3"; fail=1; fi
}
"$R" "$D/heap.dump" > "$D/summary"
"$R" --histogram "$D/heap.dump" > "$D/histogram"
"$R" --threads "$D/heap.dump" > "$D/threads"
expect "dialect" "format: go1.7 heap dump (Go runtime)" "$(grep '^format:' "$D/summary")"
# main.node is 80 bytes with pointers at 0 and 16: a layout of its own.
expect "nodes" $N "$(awk '$4 == "obj80[0,16]" { print $1 }' "$D/histogram")"
# Blocked goroutines: parked receiving, with main.blocker on their stacks.
expect "blockers" $G "$(grep -c '^  #3 0x[0-9a-f]* main.blocker ' "$D/threads")"
expect "receiving" $G "$(grep -B4 '^  #3 0x[0-9a-f]* main.blocker ' "$D/threads" | grep -c 'status=waiting waitreason="chan receive"')"
# os.Stdin, os.Stdout and os.Stderr carry finalizers of their own.
expect "finalizers" "finalizers: $((F + 3))" "$(grep '^finalizers:' "$D/summary")"
# A real runtime's dump is valid: its pointers into goroutine stacks and its
# finalizers' unrecorded types are what Go writes (docs/GODUMP.md).
"$R" --validate "$D/heap.dump" > "$D/validate" && v=0 || v=$?
expect "validate" "0 $D/heap.dump: ok, no problems" "$v $(cat "$D/validate")"
exit $fail
