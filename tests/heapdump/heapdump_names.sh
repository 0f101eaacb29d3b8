#!/usr/bin/env bash
# Every name in a signal dump is the name of its symbol, type or thread, byte
# for byte: tests/heapdump/dump_names_program.cc under LD_PRELOAD=libdump.so, a thread
# parked in std::getline (a ~250-byte demangled name) and a class with a
# name of several KiB, dumped DUMPS times on SIGUSR2. The names the program
# prints itself (demangled there) must appear exactly; every other frame name
# must be a symbol that `nm -C` lists in one of the dump's modules, or
# MODULE+0xOFFSET; every thread name one the program printed or the dumper's.
# (Issue 35: names of 256 bytes and more came out with their first 8 bytes
# replaced, the writer having kept a pointer into a freed string.)
#   heapdump_names.sh BINDIR PROGRAM [DUMPS]
set -euo pipefail
bindir=$(cd "$1" && pwd)
program=$2
dumps=${3:-10}
lib=$bindir/libdump/libdump.so
readdump=$bindir/tools/readdump/readdump
dir=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  exec 3>&- || true
  rm -rf "$dir"
}
trap cleanup EXIT
mkfifo "$dir/stdin"
LD_PRELOAD=$lib LIBDUMP_HEAPDUMP_SIGNAL=USR2 LIBDUMP_HEAPDUMP_PATH="$dir/names.%n.dump" \
  "$program" < "$dir/stdin" > "$dir/expected" 2> "$dir/stderr" &
pid=$!
exec 3> "$dir/stdin"  # the reader's stdin stays open: it parks in getline
for _ in $(seq 300); do grep -q '^ready$' "$dir/expected" 2>/dev/null && break; sleep 0.1; done
grep -q '^ready$' "$dir/expected" || { echo "FAIL: the program never got ready"; cat "$dir/stderr"; exit 1; }
for n in $(seq "$dumps"); do
  kill -USR2 "$pid"
  # Written as .partial and renamed when complete.
  for _ in $(seq 600); do [ -f "$dir/names.$n.dump" ] && break; sleep 0.1; done
  [ -f "$dir/names.$n.dump" ] || { echo "FAIL: dump $n never written"; cat "$dir/stderr"; exit 1; }
done
exec 3>&-  # end of input: the program exits
wait "$pid" || { echo "FAIL: the program exited with $?"; cat "$dir/stderr"; exit 1; }
pid=
python3 - "$readdump" "$dir/expected" "$dir"/names.*.dump <<'PY'
import re, subprocess, sys

readdump, expected_path, dumps = sys.argv[1], sys.argv[2], sys.argv[3:]
expected = {"frame": set(), "type": set(), "thread": {b"libdump-dumper"}}
for line in open(expected_path, "rb").read().split(b"\n"):
    kind, _, name = line.partition(b" ")
    if kind.decode() in expected:
        expected[kind.decode()].add(name)

# libdump's own components' types (libdump/own_component.h): the dump names
# them whether or not the program's objects need them.
own_types = {b"libdump: " + n for n in (b"dump writer", b"dump buffer", b"symbolizer", b"unwinder",
                                        b"root registry", b"profiler tables", b"flight recorder")}
name_rx = re.compile(rb'name="((?:[^"\\]|\\.)*)"')
path_rx = re.compile(rb'path="((?:[^"\\]|\\.)*)"')


def unescape(b):
    # readdump --records escapes as C does (\xNN, \n, \", \\).
    return b.decode("unicode_escape").encode("latin-1")


symbols = {}  # module path -> demangled names nm lists in it


def module_symbols(path):
    if path not in symbols:
        names = set()
        for flags in (["-C"], ["-D", "-C"]):
            r = subprocess.run(["nm", "--defined-only", *flags, path], capture_output=True)
            for line in r.stdout.split(b"\n"):
                parts = line.split(b" ", 2)
                if len(parts) == 3:
                    names.add(re.sub(rb"@@?[A-Za-z0-9_.]+$", b"", parts[2]))  # version suffix
        symbols[path] = names
    return symbols[path]


failures = 0
for dump in dumps:
    out = subprocess.run([readdump, "--records", dump], capture_output=True, check=True).stdout
    known = set()
    seen = {"frame": set(), "type": set(), "thread": set()}
    for line in out.split(b"\n"):
        kind = line.split(b" ", 1)[0].decode()
        if kind == "module":
            path = unescape(path_rx.search(line).group(1))
            if path.startswith(b"/"):
                known |= module_symbols(path)
            continue
        if kind == "threadinfo":
            kind = "thread"
        if kind not in seen:
            continue
        name = unescape(name_rx.search(line).group(1))
        seen[kind].add(name)
        ok = (name in expected[kind] or (kind == "type" and name in own_types) if kind != "frame" else
              name in known or re.fullmatch(rb".+\+0x[0-9a-f]+", name) is not None)
        if not ok:
            failures += 1
            print(f"FAIL: {dump}: {kind} name {name[:120]!r} ({len(name)} bytes) is no known name")
    for kind, names in expected.items():
        if kind == "thread":
            names = names - {b"libdump-dumper"}
        for name in names - seen[kind]:
            failures += 1
            print(f"FAIL: {dump}: no {kind} named {name[:120]!r} ({len(name)} bytes)")
if failures:
    sys.exit(1)
longest = max(len(n) for n in expected["frame"] | expected["type"])
print(f"PASS: {len(dumps)} dumps, every frame, type and thread name exact (longest {longest} bytes)")
PY
