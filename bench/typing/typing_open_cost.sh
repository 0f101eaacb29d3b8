#!/usr/bin/env bash
# What the typing pass adds to opening a large dump, side by side in one run:
# readdump --classes --no-typing (the untyped open: load, analysis, the class
# table) against readdump --classes (the same with every rule, DWARF
# included), on a dump of nlohmann_json_prog (tests/typing/, built -g; Debian's
# nlohmann-json3-dev holding RECORDS parsed records, about 17 objects each),
# and the fixed part: the same two opens of a dump of 10 records, whose
# difference is reading the DWARF of the modules the dump names (the
# program, libdump.so, Debian's libc6-dbg for libc and ld.so).
# CPU seconds (user + system) and peak RSS (GNU time), best of RUNS, with
# no index cache (an index would answer the second open).
#   bench/typing/typing_open_cost.sh BUILD_DIR [RECORDS] [RUNS]
set -euo pipefail
build=$(cd "$1" && pwd)
records=${2:-60000} runs=${3:-3}
readdump=$build/tools/readdump/readdump
prog=$build/tests/nlohmann_json_prog
[ -x "$prog" ] || { echo "build nlohmann_json_prog first (cmake --build $1 --target nlohmann_json_prog)" >&2; exit 2; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

dump() {  # RECORDS OUT: the program's heap, dumped on SIGUSR2 once it is ready
  LD_PRELOAD=$build/libdump/libdump.so LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$2" \
    "$prog" "$1" > "$work/out" 2> "$work/err" &
  pid=$!
  for _ in $(seq 1200); do grep -q ready "$work/out" 2>/dev/null && break; sleep 0.1; done
  kill -USR2 "$pid"
  for _ in $(seq 1200); do grep -q 'written to' "$work/err" 2>/dev/null && break; sleep 0.1; done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  [ -s "$2" ] || { echo "no dump: $(cat "$work/err")" >&2; exit 1; }
}

best() {  # ARGS...: "CPU_SECONDS PEAK_KB" of the fastest of $runs runs
  local b="" m=""
  for _ in $(seq "$runs"); do
    read -r u y k < <( { /usr/bin/time -f "%U %S %M" "$readdump" --classes --no-index-cache "$@" > /dev/null; } 2>&1 | tail -1)
    s=$(awk -v a="$u" -v c="$y" 'BEGIN { printf "%.2f", a + c }')
    if [ -z "$b" ] || awk -v a="$s" -v c="$b" 'BEGIN { exit !(a < c) }'; then b=$s; m=$k; fi
  done
  echo "$b $m"
}

dump "$records" "$work/large.dump"
dump 10 "$work/small.dump"
objects=$("$readdump" --classes --no-index-cache "$work/large.dump" | sed -n 's/^typed: [0-9]* of \([0-9]*\) objects.*/\1/p')
named=$("$readdump" --classes --no-index-cache "$work/large.dump" | sed -n 's/^typed: .* bytes (\(.*\))$/\1/p')
read -r s0 k0 < <(best --no-typing "$work/large.dump")
read -r s1 k1 < <(best "$work/large.dump")
read -r f0 m0 < <(best --no-typing "$work/small.dump")
read -r f1 m1 < <(best "$work/small.dump")
awk -v n="$objects" -v named="$named" -v s0="$s0" -v s1="$s1" -v k0="$k0" -v k1="$k1" \
    -v f0="$f0" -v f1="$f1" -v m0="$m0" -v m1="$m1" -v r="$records" 'BEGIN {
  fs = f1 - f0; fk = m1 - m0
  printf "| dump | objects | untyped open | typed open | ratio | untyped peak | typed peak | bytes an object |\n"
  printf "|---|---|---|---|---|---|---|---|\n"
  printf "| nlohmann_json_prog %d records (%s named) | %d | %.2f s | %.2f s | %.2f | %d KB | %d KB | %.1f |\n",
    r, named, n, s0, s1, (s0 > 0 ? s1 / s0 : 0), k0, k1, (k1 - k0) * 1024 / n
  printf "| the fixed part: 10 records | | %.2f s | %.2f s | +%.2f s | %d KB | %d KB | +%d KB |\n", f0, f1, fs, m0, m1, fk
  printf "| the large dump less the fixed part | | | | %.2f | | | %.1f |\n",
    (s0 > 0 ? (s1 - fs) / s0 : 0), (k1 - k0 - fk) * 1024 / n
}'
