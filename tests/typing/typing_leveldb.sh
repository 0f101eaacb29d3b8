#!/usr/bin/env bash
# The typing pass on a real stripped library holding data: Debian's LevelDB
# (libleveldb.so.1d has no symbols beyond its dynamic ones) with a memtable,
# a table and its blocks in the block cache (leveldb_program.cc). Without
# DWARF, the dump's vtable classes, the shapes and the holders name >= 80 %
# of the bytes, and most bytes carry a LevelDB class's name.
#   typing_leveldb.sh BINDIR PROGRAM   (KEEP=1 keeps the dump)
set -euo pipefail
bindir=$(cd "$1" && pwd)
lib=$bindir/libdump/libdump.so
readdump=$bindir/tools/readdump/readdump
keys=5000
dir=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; head -40 "$dir/classes" 2>/dev/null; exit 1; }

LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/leveldb.dump" \
  "$2" "$dir/leveldb.dump" "$dir/db" $keys > "$dir/out" || fail "the program did not run"
[ "$(cat "$dir/out")" = $((2 * keys)) ] || fail "the program read back $(cat "$dir/out") records, expected $((2 * keys))"

# The percentage of bytes named (the typed line), as an integer.
named_percent() { sed -n 's/^typed: .* bytes (\([0-9]*\)\.[0-9] %)$/\1/p' "$1"; }

"$readdump" --classes "$dir/leveldb.dump" > "$dir/classes"
"$readdump" --classes --no-typing "$dir/leveldb.dump" > "$dir/untyped"
before=$(named_percent "$dir/untyped")
after=$(named_percent "$dir/classes")
# The dump alone names LevelDB's few vtable objects (DBImpl, the caches, the
# files): the memtable's arena, the cached blocks and the handles are untyped.
[ "$before" -lt 20 ] || fail "$before % named without typing: the test no longer measures the rules"
# Measured 98-99 % (docs/TYPING.md); the issue's target is 80 %.
[ "$after" -ge 80 ] || fail "$after % of bytes named, expected at least 80"
# What holds the bytes is LevelDB's: classes named by, or held by, a leveldb:: class.
leveldb=$(awk -F'\t' 'NR > 1 && NF == 5 { t += $2; if ($5 ~ /leveldb::/) l += $2 } END { printf "%d", 100 * l / t }' "$dir/classes")
[ "$leveldb" -ge 70 ] || fail "$leveldb % of bytes in classes naming LevelDB, expected at least 70"
# The memtable's arena blocks are one class, held by the memtable's vector of blocks.
grep -q $'\tholder\t(held by std::vector body (held by leveldb::[A-Za-z:]* +0x[0-9a-f]*) \\[\\])$' "$dir/classes" \
  || fail "no class of arena blocks held by a LevelDB object's vector"
# Deterministic: the same table twice.
"$readdump" --classes "$dir/leveldb.dump" | cmp -s - "$dir/classes" || fail "two runs differ"
echo "PASS: $before % named by the dump alone, $after % typed, $leveldb % under LevelDB's classes: $(sed -n 1p "$dir/classes")"
