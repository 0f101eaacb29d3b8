#!/usr/bin/env bash
# Mixed sizes with cross-thread frees (alloc_bench_remote_mix, issue 28's
# workload) and its neighbours, under LD_PRELOAD of each allocator, side by
# side in one run. Prints the median CPU time (user + sys) of each cell, peak
# RSS, and libdump's ratios to each peer and to the best peer.
#
# CPU time, not wall time: on a shared machine a thread that waits for a core
# costs wall time but no CPU time, and the waits are the neighbours', not the
# allocator's. Rounds interleave the allocators (the order rotates each round)
# and a time ratio is the median over rounds of the ratio within one round.
#
# Usage: bench/alloc/remote_mix.sh [BUILD_DIR] [ROUNDS]
#   BUILD_DIR defaults to build-alloc; ROUNDS defaults to 5.
#   REMOTE_MIX_ONLY=issue,4-threads runs only the named rows.
#   ALLOC_BENCH_BASELINE=/path/to/libdump.so adds a "before" column (not a peer).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-alloc}
reps=${2:-5}
cmake --build "$build" -j2 --target libdump_runtime alloc_bench_remote_mix >/dev/null
lib=/usr/lib/x86_64-linux-gnu
exec python3 - "$build" "$reps" "$lib" <<'PY'
import os, subprocess, sys, tempfile, shutil

build, reps, lib = sys.argv[1], int(sys.argv[2]), sys.argv[3]
allocators = [
    ("glibc", None),
    ("tcmalloc", f"{lib}/libtcmalloc_minimal.so.4"),
    ("jemalloc", f"{lib}/libjemalloc.so.2"),
    ("mimalloc", f"{lib}/libmimalloc.so.2"),
    ("libdump", f"{build}/libdump/libdump.so"),
]
if os.environ.get("ALLOC_BENCH_BASELINE"):
    allocators.append(("before", os.environ["ALLOC_BENCH_BASELINE"]))
missing = [n for n, p in allocators if p is not None and not os.path.exists(p)]
if missing:
    print(f"not found, left out: {', '.join(missing)}", file=sys.stderr)
allocators = [(n, p) for n, p in allocators if p is None or os.path.exists(p)]
exe = f"{build}/bench/alloc/alloc_bench_remote_mix"
# name, arguments (threads, remote one in, mix[, the receiver reads the block])
rows = [
    ("issue", ["2", "8", "issue"]),
    ("remote 1/2", ["2", "2", "issue"]),
    ("remote 1/32", ["2", "32", "issue"]),
    ("no remote", ["2", "0", "issue"]),
    ("4 threads", ["4", "8", "issue"]),
    ("small only", ["2", "8", "small"]),
    ("no big", ["2", "8", "medium"]),
    ("5 % big", ["2", "8", "big"]),
    ("reader frees", ["2", "8", "issue", "1"]),
]
only = os.environ.get("REMOTE_MIX_ONLY")
if only:
    rows = [r for r in rows if r[0] in only.split(",")]
tmp = tempfile.mkdtemp()

def run(args, preload):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    out, rss = os.path.join(tmp, "out"), os.path.join(tmp, "rss")
    # /usr/bin/time for the peak RSS (a child forked from python would carry
    # python's high-water mark); wait4's usage covers time and its child.
    cmd = ["/usr/bin/time", "-f", "%M", "-o", rss, exe] + args
    pid = os.fork()
    if pid == 0:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.execvpe(cmd[0], cmd, env)
    _, status, ru = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"remote_mix {' '.join(args)} failed under {preload}: status {status}")
    return ru.ru_utime + ru.ru_stime, int(open(rss).read().split()[-1]) / 1024.0, open(out).read()

load = open("/proc/loadavg").read().split()[:3]
print(f"load average at start: {' '.join(load)}", file=sys.stderr)
cpu, peak, expected = {}, {}, {}
for r in range(reps):
    for name, args in rows:
        order = allocators[r % len(allocators):] + allocators[:r % len(allocators)]
        for aname, preload in order:
            t, rss, out = run(args, preload)
            if expected.setdefault(name, out) != out:
                sys.exit(f"{name}: output under {aname} differs")
            cpu.setdefault((name, aname), []).append(t)
            peak.setdefault((name, aname), []).append(rss)
    print(f"  round {r + 1} of {reps} done", file=sys.stderr)
end_load = open("/proc/loadavg").read().split()[:3]

def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

def paired(name, a, bs):
    return median([cpu[(name, a)][i] / min(cpu[(name, b)][i] for b in bs) for i in range(reps)])

names = [a for a, _ in allocators]
peers = [n for n in names if n not in ("libdump", "before")]
print(f"\nload average {' '.join(load)} at start, {' '.join(end_load)} at end; {reps} interleaved rounds")
print("CPU time (user + sys, s) median of rounds / peak RSS (MiB) median of rounds\n")
print("| row | " + " | ".join(names) + " |")
print("|---" * (1 + len(names)) + "|")
for name, _ in rows:
    print(f"| {name} | " + " | ".join(f"{median(cpu[(name, n)]):.3f} / {median(peak[(name, n)]):.1f}" for n in names) + " |")
if "libdump" in names:
    before = ["vs before"] if "before" in names else []
    print("\nlibdump / peer: CPU time (median of per-round ratios) / peak RSS (ratio of medians); below 1.00 = libdump better\n")
    print("| row | " + " | ".join([f"vs {p}" for p in peers] + before) + " | vs best peer time | vs best peer RSS |")
    print("|---" * (3 + len(peers) + len(before)) + "|")
    for name, _ in rows:
        lr = median(peak[(name, "libdump")])
        cells = [f"{paired(name, 'libdump', [p]):.2f} / {lr / median(peak[(name, p)]):.2f}" for p in peers]
        if before:
            cells.append(f"{paired(name, 'libdump', ['before']):.2f} / {lr / median(peak[(name, 'before')]):.2f}")
        fast = [p for p in peers if p != "glibc"]
        best_rss = min(median(peak[(name, p)]) for p in fast)
        print(f"| {name} | " + " | ".join(cells) + f" | {paired(name, 'libdump', fast):.2f} | {lr / best_rss:.2f} |")
    print("\n(best peer: the best of tcmalloc, jemalloc and mimalloc; in time, in each round)")
shutil.rmtree(tmp)
PY
