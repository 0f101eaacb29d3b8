#!/usr/bin/env bash
# Polymorphic objects in a core are typed by their vtables and named from
# their RTTI as the runtime names them: the same class names and counts from
# coretodump of a glibc core as from the preload's own dump.
#   coredump_polymorphic.sh BINDIR PROGRAM   (KEEP=1 keeps the files)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# histogram DUMP: "COUNT NAME" of the dump's own types (no typing pass).
histogram() { "$readdump" --records "$1" | sed -n 's/^type .* name="\(.*\)" efaceptr.*/\1/p' | sort > "$2.names"; }
count_of() {  # DUMP CLASS: objects of the type named CLASS
  local id
  id=$("$readdump" --records "$1" | sed -n "s/^type .*addr=\(0x[0-9a-f]*\) .*name=\"$2\" .*/\1/p")
  [ -n "$id" ] || { echo 0; return; }
  "$readdump" --records "$1" | grep -c "^object .* type=$id "
}

run() {  # NAME [ENV...]: runs the program, dumps it, leaves $dir/NAME.dump
  local name=$1
  shift
  rm -f "$dir/ready" "$dir/done"
  env "$@" "$program" "$dir/ready" "$dir/done" &
  pid=$!
  wait_for "$dir/ready"
}

# On glibc, through a core.
run glibc
gcore -o "$dir/core" "$pid" > /dev/null 2>&1 || fail "gcore"
touch "$dir/done"; wait "$pid"; pid=
"$coretodump" -q "$dir/core."* -o "$dir/glibc.dump" || fail "coretodump"
"$readdump" --validate "$dir/glibc.dump" > "$dir/validate" || fail "does not validate: $(head -3 "$dir/validate")"
# Under the preload, dumped by the runtime on a signal.
if [ -e "$bindir/libdump/libdump.so" ]; then
  run preload LD_PRELOAD="$bindir/libdump/libdump.so" LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/preload.dump"
  kill -USR2 "$pid"
  wait_for "$dir/preload.dump"
  sleep 0.5
  touch "$dir/done"; wait "$pid"; pid=
fi
for class in 'shapes::Circle' 'shapes::Labelled' '(anonymous namespace)::Hidden'; do
  want=300; [ "$class" = shapes::Labelled ] && want=200; [ "$class" = '(anonymous namespace)::Hidden' ] && want=100
  g=$(count_of "$dir/glibc.dump" "$class")
  [ "$g" = "$want" ] || fail "$class: $g objects on glibc, expected $want"
  if [ -e "$dir/preload.dump" ]; then
    p=$(count_of "$dir/preload.dump" "$class")
    [ "$p" = "$want" ] || fail "$class: $p objects under the preload, expected $want"
  fi
  echo "$class: glibc $g, preload ${p:-not run}"
done
# The records have the runtime's shapes: typeinfo polymorphic with its vtable, an itab.
# (grep -q would stop reading at the first match, and readdump, cut off, would fail the pipe.)
"$readdump" --records "$dir/glibc.dump" | grep '^typeinfo .*flags=.*polymorphic' > /dev/null || fail "no polymorphic typeinfo"
"$readdump" --records "$dir/glibc.dump" | grep '^itab ' > /dev/null || fail "no itab"
echo PASS
