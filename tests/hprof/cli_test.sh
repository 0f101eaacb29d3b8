#!/bin/sh
# dumptohprof's command line: usage and exit codes, one-line errors on bad
# input with nothing left behind, --redact.
#   cli_test.sh DUMPTOHPROF GOOD_DUMP WORKDIR
set -u
tool=$1 good=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

"$tool" --help > "$work/help" 2>&1
check "--help exits 0 and shows usage" "[ $? -eq 0 ] && grep -q 'usage: dumptohprof' '$work/help' && grep -q -- '--redact' '$work/help'"
"$tool" > /dev/null 2>&1
check "no arguments: exit 2" "[ $? -eq 2 ]"
"$tool" --bogus "$good" "$work/x.hprof" > /dev/null 2>&1
check "unknown option: exit 2" "[ $? -eq 2 ]"
"$tool" "$work/missing.dump" "$work/x.hprof" 2> "$work/err"
check "missing input: exit 1, one line" "[ $? -eq 1 ] && [ ! -e '$work/x.hprof' ] && grep -q '^$work/missing.dump: cannot open: ' '$work/err'"

# Truncated in the middle of the object records: one line FILE:OFFSET: kind K ...
size=$(wc -c < "$good")
head -c $((size / 2)) "$good" > "$work/cut.dump"
echo "previous content" > "$work/out.hprof"
"$tool" -q --force "$work/cut.dump" "$work/out.hprof" 2> "$work/err"
rc=$?
check "truncated dump: exit 1" "[ $rc -eq 1 ]"
check "truncated dump: one line FILE:OFFSET: kind K (name): ..." \
  "[ \$(wc -l < '$work/err') -eq 1 ] && grep -Eq '^$work/cut.dump:[0-9]+: kind [0-9]+ \\([a-z]+\\): ' '$work/err'"
check "truncated dump: the old output is untouched, no temporary left" \
  "[ \"\$(cat '$work/out.hprof')\" = 'previous content' ] && [ \$(ls '$work' | grep -c tmp) -eq 0 ]"
cat "$work/err"

printf 'not a dump at all\n' > "$work/junk.dump"
"$tool" -q "$work/junk.dump" "$work/junk.hprof" 2> "$work/err"
check "not a dump: exit 1, one line, no output" \
  "[ $? -eq 1 ] && [ \$(wc -l < '$work/err') -eq 1 ] && grep -q '^$work/junk.dump:0: ' '$work/err' && [ ! -e '$work/junk.hprof' ]"

# The generator's untyped string holds this secret: kept by default, zeroed by --redact.
secret="correct horse battery staple"
"$tool" -q "$good" "$work/plain.hprof"
check "plain conversion keeps the bytes" "grep -q '$secret' '$work/plain.hprof'"
"$tool" -q --redact "$good" "$work/redacted.hprof"
check "--redact: exit 0" "[ $? -eq 0 ]"
check "--redact: the secret is gone" "! grep -q '$secret' '$work/redacted.hprof'"
check "--redact: field names stay" "grep -q 'weight' '$work/redacted.hprof'"
check "--redact: same size" "[ \$(wc -c < '$work/plain.hprof') -eq \$(wc -c < '$work/redacted.hprof') ]"
exit $fail
