#!/usr/bin/env bash
# WriteHeapDump vs Go's runtime/debug.WriteHeapDump vs HotSpot's heap dumper
# (jcmd GC.heap_dump -all) on the same graph, one program at a time, in one
# run (issue 4). Prints heap bytes/s, objects/s and pause per case, and the
# ratios libdump/Go and libdump/HotSpot (throughput ratio: above 1 = libdump
# faster). Each cell is the median of REPS runs (default 3).
#
# Rows: N=1e6 nodes of 16 B-4 KiB (log-uniform, ~0.73 GB); N=1e7 nodes of
# 16 B-1 KiB (~2.4 GB): at 16 B-4 KiB 1e7 nodes are ~7.3 GB per program, and
# with the dump file in /dev/shm (HotSpot's hprof of Object[] is 2x the heap)
# that does not fit a shared 24 GiB machine. Pass N to run one row at full
# size range instead.
#
# Payload words after a node's two pointers are zero here as in the Java
# peer's Object[] (nulls); the Go peer keeps a random 16-bit word per 16 B,
# which only a compressed dump would notice (dump_bench --payload random).
#
# Usage: bench/dump/run.sh [BUILD_DIR] [N] [REPS] [disk]
# A fourth argument "disk" leaves out the /dev/shm cases (their files take
# the machine's memory: 0.8 GB here, 1.5-4.7 GB for HotSpot's hprof).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-dumpbench}
only_n=${2:-}
reps=${3:-3}
disk_only=${4:-}
if [ ! -d "$build" ]; then cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null; fi
cmake --build "$build" -j2 --target dump_bench >/dev/null
tmp=$(mktemp -d /tmp/dumpbench.XXXXXX)
shm=$(mktemp -d /dev/shm/dumpbench.XXXXXX)
trap 'rm -rf "$tmp" "$shm"' EXIT
(cd "$root/bench/dump/go" && GOCACHE=$tmp/gocache GOFLAGS= go build -o "$tmp/dumppeer" .)
javac -d "$tmp/java" "$root/bench/dump/java/DumpPeer.java"

if [ -n "$only_n" ]; then rows="$only_n:16:4096"; else rows="1000000:16:4096 10000000:16:1024"; fi
out=$tmp/results
# Raw, stopped and forked; compressed: on the dumping thread with the world
# stopped (the path before parallel compression, "-1t"), on every CPU
# stopped, and on every CPU in a fork snapshot (the default of dumps on a
# signal or over HTTP).
libdump_cases=null,shm,disk,fork-null,fork-shm,fork-disk,shm-zstd-1t,disk-zstd-1t,disk-zstd,fork-shm-zstd,fork-disk-zstd
go_cases=null,shm,disk
java_cases=shm,disk,shm-gz,disk-gz
if [ "$disk_only" = disk ]; then
  libdump_cases=null,disk,fork-null,fork-disk,disk-zstd-1t,disk-zstd,fork-disk-zstd
  go_cases=null,disk
  java_cases=disk,disk-gz
fi
for row in $rows; do
  IFS=: read -r n lo hi <<<"$row"
  # Java heap: the graph plus headroom (Object[] nodes; no GC during the dump).
  xmx=$(( (n * (hi > 1024 ? 750 : 250) * 2 / 1000000000) + 2 ))g
  echo "== N=$n sizes $lo-$hi B, $reps runs per case (median)"
  "$build/bench/dump/dump_bench" --n "$n" --min "$lo" --max "$hi" --reps "$reps" --shm "$shm" --disk "$tmp" \
    --cases "$libdump_cases" | tee -a "$out"
  "$build/bench/dump/dump_bench" --n "$n" --min "$lo" --max "$hi" --reps "$reps" --shm "$shm" --disk "$tmp" \
    --cases null,fork-null --thp | tee -a "$out"
  "$tmp/dumppeer" -n "$n" -min "$lo" -max "$hi" -reps "$reps" -shm "$shm" -disk "$tmp" -cases "$go_cases" | tee -a "$out"
  java -Xms"$xmx" -Xmx"$xmx" -XX:+UseParallelGC -cp "$tmp/java" DumpPeer "$n" "$lo" "$hi" "$reps" "$shm" "$tmp" \
    "$java_cases" | tee -a "$out"
done

python3 - "$out" <<'PY'
import sys
res = {}
for line in open(sys.argv[1]):
    if not line.startswith("RESULT "): continue
    kv = dict(x.split("=", 1) for x in line.split()[1:])
    res[(int(kv["nodes"]), kv["impl"], kv["case"])] = kv
rows = [  # label, libdump case, go case, hotspot case
    ("/dev/null, raw", "null", "null", None),
    ("/dev/shm file, raw", "shm", "shm", "shm"),
    ("/tmp (disk) file, raw", "disk", "disk", "disk"),
    ("fork snapshot, /dev/null", "fork-null", None, None),
    ("fork snapshot, /dev/shm", "fork-shm", None, None),
    ("fork snapshot, /tmp", "fork-disk", None, None),
    ("/dev/shm, zstd 1 thread stop | gz", "shm-zstd-1t", None, "shm-gz"),
    ("/tmp, zstd 1 thread stop | gz", "disk-zstd-1t", None, "disk-gz"),
    ("/tmp, zstd all CPUs stop | gz", "disk-zstd", None, "disk-gz"),
    ("/dev/shm, zstd all CPUs fork | gz", "fork-shm-zstd", None, "shm-gz"),
    ("/tmp, zstd all CPUs fork | gz", "fork-disk-zstd", None, "disk-gz"),
    ("fork, /dev/null, THP heap (exp.)", ("libdump-thp", "fork-null"), None, None),
    ("stop, /dev/null, THP heap (exp.)", ("libdump-thp", "null"), None, None),
]
def get(n, impl, case):
    if case is None: return None
    if isinstance(case, tuple): impl, case = case
    return res.get((n, impl, case))
for n in sorted({k[0] for k in res}):
    any_ = next(v for k, v in res.items() if k[0] == n)
    gb = int(any_["heap_bytes"]) / 1e9
    print(f"\nN = {n:.0e} nodes, {gb:.2f} GB of objects (same sizes in all three)")
    print(f"| {'case':34} | libdump GB/s | Mobj/s | pause ms | ms/GB | MB | Go GB/s | Go pause ms | HotSpot GB/s | HotSpot pause ms | HotSpot MB | x Go | x HotSpot |")
    print("|" + "|".join(["-" * 36] + ["-" * w for w in (14, 8, 10, 7, 7, 9, 13, 14, 18, 12, 6, 11)]) + "|")
    for label, lc, gc, hc in rows:
        l, g, h = get(n, "libdump", lc), get(n, "go", gc), get(n, "hotspot", hc)
        if l is None: continue
        f = lambda r, k, fmt: (fmt % float(r[k])) if r else "-"
        mb = lambda r: "%.0f" % (int(r["dump_bytes"]) / 1e6) if r and int(r["dump_bytes"]) > 0 else "-"
        ratio = lambda r: "%.2f" % (float(l["gbps"]) / float(r["gbps"])) if r else "-"
        print(f"| {label:34} | {f(l,'gbps','%.2f'):>12} | {f(l,'mobjps','%.2f'):>6} | {f(l,'pause_ms','%.1f'):>8} | "
              f"{f(l,'pause_ms_per_gb','%.1f'):>5} | {mb(l):>5} | {f(g,'gbps','%.2f'):>7} | {f(g,'pause_ms','%.0f'):>11} | "
              f"{f(h,'gbps','%.2f'):>12} | {f(h,'pause_ms','%.0f'):>16} | {mb(h):>10} | {ratio(g):>4} | {ratio(h):>9} |")
PY
