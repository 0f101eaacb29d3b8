#!/bin/sh
# readdump and dumptohprof never destroy data, and agree on their command
# line: `-` for standard input and output, existing outputs kept unless
# --force, symlinks and devices never replaced, the input never the output,
# no temporary left by SIGTERM, the output's mode taken from the input,
# --json valid on bad input, the same exit status for the same mistake.
#   tools_cli_test.sh DUMPTOHPROF READDUMP TESTDATA WORKDIR
set -u
d2h=$1 rd=$2 data=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
json_ok() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if "error" in d else 3)' "$1"; }
lines() { wc -l < "$1" | tr -d ' '; }

cp "$data/full.dump" "$work/a.dump"
chmod 600 "$work/a.dump"
cp "$work/a.dump" "$work/a.orig"

# --- dumptohprof: outputs ---
"$d2h" -q "$work/a.dump" "$work/a.dump" 2> "$work/err"
check "output equal to input: exit 1, the dump intact" "[ $? -eq 1 ] && cmp -s '$work/a.dump' '$work/a.orig'"
check "output equal to input: one line" "[ \$(lines '$work/err') -eq 1 ] && grep -q 'is the input file' '$work/err'"
ln "$work/a.dump" "$work/hard.dump"
"$d2h" -q --force "$work/a.dump" "$work/hard.dump" 2> /dev/null
check "a hard link to the input, even with --force: exit 1, intact" "[ $? -eq 1 ] && cmp -s '$work/a.dump' '$work/a.orig'"
rm -f "$work/hard.dump"

"$d2h" -q "$work/a.dump" "$work/a.hprof"
check "new output: exit 0" "[ $? -eq 0 ] && [ -s '$work/a.hprof' ]"
check "output mode follows the input's (0600)" "[ \$(stat -c %a '$work/a.hprof') = 600 ]"
check "no temporary left" "[ \$(ls '$work' | grep -c tmp) -eq 0 ]"
cp "$work/a.hprof" "$work/a.hprof.orig"
echo "previous" > "$work/old.hprof"
"$d2h" -q "$work/a.dump" "$work/old.hprof" 2> "$work/err"
check "existing output without --force: exit 1, kept" \
  "[ $? -eq 1 ] && [ \"\$(cat '$work/old.hprof')\" = previous ] && grep -q -- 'already exists; --force replaces it' '$work/err'"
"$d2h" -q --force "$work/a.dump" "$work/old.hprof"
check "existing output with --force: replaced" "[ $? -eq 0 ] && cmp -s '$work/old.hprof' '$work/a.hprof'"
cp "$work/a.dump" "$work/b.dump" && chmod 644 "$work/b.dump"
"$d2h" -q "$work/b.dump" "$work/b.hprof"
check "output mode follows the input's (0644)" "[ \$(stat -c %a '$work/b.hprof') = 644 ]"

echo "precious" > "$work/target"
ln -s "$work/target" "$work/link.hprof"
"$d2h" -q --force "$work/a.dump" "$work/link.hprof" 2> "$work/err"
check "symlink output, even with --force: exit 1, link and target intact" \
  "[ $? -eq 1 ] && [ -L '$work/link.hprof' ] && [ \"\$(cat '$work/target')\" = precious ]"
"$d2h" -q --force "$work/a.dump" /dev/null 2> "$work/err"
check "device output, even with --force: exit 1, still a device" "[ $? -eq 1 ] && [ -c /dev/null ]"
"$d2h" -q "$work/a.dump" "$work/no/such/dir/x.hprof" 2> /dev/null
check "output in a missing directory: exit 1" "[ $? -eq 1 ]"

"$d2h" -q --class-map "$work/link.hprof" "$work/a.dump" "$work/c.hprof" 2> /dev/null
check "--class-map to a symlink: exit 1, target intact, no hprof" \
  "[ $? -eq 1 ] && [ \"\$(cat '$work/target')\" = precious ] && [ ! -e '$work/c.hprof' ]"
echo "previous" > "$work/map.txt"
"$d2h" -q --class-map "$work/map.txt" "$work/a.dump" "$work/c.hprof" 2> /dev/null
check "--class-map to an existing file: exit 1, kept" "[ $? -eq 1 ] && [ \"\$(cat '$work/map.txt')\" = previous ]"
"$d2h" -q --force --class-map "$work/map.txt" "$work/a.dump" "$work/c.hprof"
check "--class-map with --force: written" "[ $? -eq 0 ] && grep -q \"\$(printf '\\t')\" '$work/map.txt'"

# --- dumptohprof: standard input and output ---
"$d2h" -q "$work/a.dump" - > "$work/stdout.hprof"
check "OUT '-': the same bytes on standard output" "[ $? -eq 0 ] && cmp -s '$work/stdout.hprof' '$work/a.hprof'"
"$d2h" "$work/a.dump" - 2> "$work/err" > "$work/stdout2.hprof"
check "OUT '-': the summary goes to stderr" "cmp -s '$work/stdout2.hprof' '$work/a.hprof' && grep -q objects '$work/err'"
cat "$work/a.dump" | "$d2h" -q - "$work/pipe.hprof"
# The header's timestamp (bytes 24-31) is the dump's mtime for a file, the time
# of conversion for a pipe.
check "DUMP '-' from a pipe: the same hprof but the timestamp" \
  "[ $? -eq 0 ] && cmp -s -i 31 '$work/pipe.hprof' '$work/a.hprof'"
zstd -q -c "$work/a.dump" | "$d2h" -q - - > "$work/zpipe.hprof"
check "zstd pipe to stdout" "[ $? -eq 0 ] && cmp -s -i 31 '$work/zpipe.hprof' '$work/a.hprof'"
"$d2h" -q "$work/a.dump" - >> "$work/a.dump" 2> /dev/null
check "standard output appending to the input: exit 1, intact" "[ $? -eq 1 ] && cmp -s '$work/a.dump' '$work/a.orig'"

# SIGTERM while the temporary exists (standard input is still being copied).
mkfifo "$work/fifo"
"$d2h" -q - "$work/sig.hprof" < "$work/fifo" &
pid=$!
exec 3> "$work/fifo"
cat "$work/a.dump" >&3
for _ in $(seq 100); do ls "$work" | grep -q 'sig.hprof.tmp' && break; sleep 0.1; done
check "a temporary exists while converting" "ls '$work' | grep -q 'sig.hprof.tmp'"
kill -TERM "$pid"
wait "$pid"
rc=$?
exec 3>&-
check "SIGTERM: killed by it (status 143), no temporary, no output" \
  "[ $rc -eq 143 ] && [ \$(ls '$work' | grep -c 'sig.hprof') -eq 0 ]"

# --- readdump: standard input, --json on bad input ---
"$rd" --records "$work/a.dump" > "$work/records.file"
zstd -q -c "$work/a.dump" | "$rd" --records - > "$work/records.pipe"
check "readdump -: a zstd pipe reads as the file" "[ $? -eq 0 ] && cmp -s '$work/records.file' '$work/records.pipe'"
zstd -q -c "$work/a.dump" | "$rd" --validate - > "$work/validate.pipe"
check "readdump --validate -: a pipe is read twice" "[ $? -eq 0 ] && grep -q '^<stdin>: ok, no problems' '$work/validate.pipe'"
size=$(wc -c < "$work/a.dump")
head -c $((size / 2)) "$work/a.dump" > "$work/cut.dump"
for args in "--json" "--json --records" "--json --validate" "--json --records --validate --histogram --threads"; do
  "$rd" $args "$work/cut.dump" > "$work/json.out" 2> "$work/err"
  rc=$?
  check "readdump $args on a truncated dump: exit 1, valid JSON with the error, one line on stderr" \
    "[ $rc -eq 1 ] && json_ok '$work/json.out' && [ \$(lines '$work/err') -eq 1 ]"
done
printf 'not a dump\n' | "$rd" --json - > "$work/json.out" 2> /dev/null
check "readdump --json on a bad header: valid JSON" "[ $? -eq 1 ] && json_ok '$work/json.out'"
"$rd" --json "$work/missing.dump" > "$work/json.out" 2> /dev/null
check "readdump --json on a missing file: valid JSON" "[ $? -eq 1 ] && json_ok '$work/json.out'"

# --- the same mistake, the same status ---
"$rd" "$work" 2> "$work/err1"; r1=$?
"$d2h" "$work" "$work/dir.hprof" 2> "$work/err2"; r2=$?
check "a directory as input: exit 1 in both, 'is a directory'" \
  "[ $r1 -eq 1 ] && [ $r2 -eq 1 ] && grep -q 'is a directory' '$work/err1' && grep -q 'is a directory' '$work/err2'"
"$rd" "$work/missing.dump" 2> /dev/null; r1=$?
"$d2h" "$work/missing.dump" "$work/m.hprof" 2> /dev/null; r2=$?
check "a missing input: exit 1 in both" "[ $r1 -eq 1 ] && [ $r2 -eq 1 ]"
"$rd" --bogus x 2> /dev/null; r1=$?
"$d2h" --bogus x y 2> /dev/null; r2=$?
check "an unknown option: exit 2 in both" "[ $r1 -eq 2 ] && [ $r2 -eq 2 ]"
for opt in "--threads -1" "--threads 257" "--threads x" "--segment-mb 0" "--segment-mb 4096"; do
  "$d2h" $opt "$work/a.dump" "$work/opt.hprof" 2> "$work/err"
  check "dumptohprof $opt: usage error, exit 2, no output" \
    "[ $? -eq 2 ] && [ ! -e '$work/opt.hprof' ] && ! grep -q bad_alloc '$work/err'"
done
"$rd" --top -1 "$work/a.dump" 2> /dev/null
check "readdump --top -1: exit 2" "[ $? -eq 2 ]"
for t in "$rd" "$d2h"; do
  "$t" --version > "$work/version"
  check "$(basename "$t") --version" "[ $? -eq 0 ] && grep -Eq '^[a-z0-9]+ \\(libdump\\) [0-9]+\\.[0-9]+\\.[0-9]+$' '$work/version'"
done
exit $fail
