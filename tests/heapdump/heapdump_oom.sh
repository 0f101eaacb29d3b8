#!/usr/bin/env bash
# An unmodified program (python3) run with LD_PRELOAD=libdump.so and
# LIBDUMP_HEAPDUMP_ON_OOM=1 under a 4 GB address-space limit asks for 8 GiB:
# it gets its MemoryError as without libdump, and leaves one valid private
# dump of its heap, under the final name only.
#   heapdump_oom.sh BINDIR
set -euo pipefail
source "$(dirname "$0")/python_dump_checks.sh"
bindir=$(cd "$1" && pwd)
lib=$bindir/libdump/libdump.so
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
script='
d = {i: str(i) * 10 for i in range(20000)}
try:
    x = bytearray(8 << 30)
    print("allocated")
except MemoryError:
    print("MemoryError")
'
want=$( (ulimit -v 4000000; PYTHONMALLOC=malloc python3 -c "$script") )
got=$( (ulimit -v 4000000; PYTHONMALLOC=malloc LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_ON_OOM=1 \
  LIBDUMP_HEAPDUMP_PATH="$dir/py.%p.dump" python3 -c "$script") 2>"$dir/err")
[ "$want" = MemoryError ] || { echo "FAIL: without libdump python3 printed '$want'"; exit 1; }
[ "$got" = "$want" ] || { echo "FAIL: with libdump python3 printed '$got'"; cat "$dir/err"; exit 1; }
dumps=("$dir"/py.*.dump)
[ ${#dumps[@]} -eq 1 ] && [ -f "${dumps[0]}" ] || { echo "FAIL: want one dump, have: $(ls "$dir")"; cat "$dir/err"; exit 1; }
grep -q "on out of memory (858993459[0-9] bytes requested) written to" "$dir/err" || { echo "FAIL: no report on stderr"; cat "$dir/err"; exit 1; }
objects=$(check_python_dump "${dumps[0]}")
echo "PASS: python3 dumped $objects objects when its 8 GiB request failed"
