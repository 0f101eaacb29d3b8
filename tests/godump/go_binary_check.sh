#!/bin/sh
# dumptohprof --binary on a real Go program: builds tests/godump/producer.go
# with the installed Go, dumps its heap with known contents, converts it
# typed by the producer's DWARF and checks the classes against what the
# program made, with VisualVM's heap library (tests/hprof/heap_check.sh);
# then the same dump zstd-compressed; then a file that is not ELF, a Go binary without DWARF, another Go program
# and a libdump dump: each one line on stderr, exit 1, no output file.
#   go_binary_check.sh DUMPTOHPROF READDUMP HEAP_CHECK WORKDIR
set -eu
T=$1 R=$2 CHECK=$3 D=$4
. "$(dirname "$0")/../pprof/go_workdir.sh"
src=$(cd "$(dirname "$0")" && pwd)
N=37 G=4 F=5
(cd "$D" && GO111MODULE=off go build -o "$D/producer" "$src/producer.go")
"$D/producer" "$D/heap.dump" $N $G $F
fail=0
expect() {  # expect DESCRIPTION WANT GOT
  if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1: want '$2', got '$3'"; fail=1; fi
}

"$T" --binary "$D/producer" --class-map "$D/map" "$D/heap.dump" "$D/typed.hprof" > "$D/summary"
cat "$D/summary"
count() { awk -F '\t' -v c="$1" '$2 == c { n += $3 } END { print n + 0 }' "$D/map"; }
expect "main.node objects" $N "$(count main.node)"
expect "main.guarded objects" $F "$(count main.guarded)"
expect "guards' backing array" 1 "$(count '*main.guarded[]')"
# The typed line counts every object of the dump, as readdump does.
objects=$("$R" "$D/heap.dump" | sed -n 's/^objects: \([0-9]*\) .*/\1/p')
expect "objects counted" "$objects" "$(sed -n "s|^Go types from $D/producer: [0-9]* of \([0-9]*\) objects typed .*|\1|p" "$D/summary")"
typed=$(sed -n "s|^Go types from $D/producer: \([0-9]*\) of .*|\1|p" "$D/summary")
# At least the nodes, the guarded objects and their slice's array are typed.
expect "typed at least the program's objects" yes "$([ "${typed:-0}" -ge $((N + F + 1)) ] && echo yes || echo no)"
# readdump and heapview share the typing (docs/TYPING.md): the same objects,
# the same class names.
"$R" --classes --binary "$D/producer" "$D/heap.dump" > "$D/classes"
expect "readdump --binary types what dumptohprof --binary types" "$typed" \
  "$(sed -n 's/^typed: \([0-9]*\) of .*/\1/p' "$D/classes")"
expect "readdump --binary: main.node" $N "$(awk -F '\t' '$5 == "main.node" { print $1 }' "$D/classes")"

# VisualVM's heap library reads the typed hprof: every reference resolves,
# the counts match readdump's per dump type, and the classes have Go's fields.
"$CHECK" "$T" "$R" "$D/heap.dump" "$D/visualvm" --binary "$D/producer" -- \
  --class "main.node=$N:next,val,prev,magic,pad[0],pad[5]" --class "main.guarded=$F:id,buf" \
  --class "*main.guarded[]=1" > "$D/visualvm.out" 2>&1 && v=0 || v=$?
tail -n 3 "$D/visualvm.out"
expect "VisualVM" "0 RESULT: OK" "$v $(tail -n 1 "$D/visualvm.out")"

# A compressed dump is typed alike (three reads of a zstd stream).
zstd -q -f "$D/heap.dump" -o "$D/heap.dump.zst"
"$T" -q --binary "$D/producer" --class-map "$D/map.zst" "$D/heap.dump.zst" "$D/typed-zst.hprof"
expect "zstd dump's class map" same "$(cmp -s "$D/map" "$D/map.zst" && echo same || echo differs)"

refused() {  # refused DESCRIPTION BINARY DUMP WANTED-STDERR (a prefix)
  rm -f "$D/refused.hprof"
  "$T" --binary "$2" "$3" "$D/refused.hprof" > /dev/null 2> "$D/err" && s=0 || s=$?
  expect "$1: exit status" 1 $s
  expect "$1: one line" 1 "$(wc -l < "$D/err")"
  case $(cat "$D/err") in
    "$4"*) echo "ok: $1: $(cat "$D/err")" ;;
    *) echo "FAIL: $1: want '$4...', got '$(cat "$D/err")'"; fail=1 ;;
  esac
  expect "$1: no output" no "$([ -e "$D/refused.hprof" ] && echo yes || echo no)"
}
printf 'not a program\n' > "$D/text"
refused "not ELF" "$D/text" "$D/heap.dump" "$D/text: not an ELF file"
(cd "$D" && GO111MODULE=off go build -ldflags=-w -o "$D/nodwarf" "$src/producer.go")
refused "no DWARF" "$D/nodwarf" "$D/heap.dump" "$D/nodwarf: has no DWARF debug information"
mkdir -p "$D/other"
printf 'package main\n\nfunc main() { println("another program") }\n' > "$D/other/other.go"
(cd "$D/other" && GO111MODULE=off go build -o "$D/otherprog" other.go)
refused "another program" "$D/otherprog" "$D/heap.dump" "$D/heap.dump: --binary is not the program that wrote this dump: function "
refused "a libdump dump" "$D/producer" "$src/../../testdata/full.dump" \
  "$src/../../testdata/full.dump: --binary types the dumps of Go runtimes; this is a libdump dump"
exit $fail
