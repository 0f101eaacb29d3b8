#!/usr/bin/env bash
# Runs every allocator workload under LD_PRELOAD of each allocator, side by
# side, and prints wall time and peak RSS, then libdump's ratios to each peer
# (below 1.00 = libdump is faster / smaller), and libdump / the best of
# tcmalloc, jemalloc and mimalloc per workload: median and spread (lowest and
# highest) of the per-round ratios. Last, the fork() pause of a
# process with a 1 GiB heap under each allocator (libdump with and without
# huge pages), what a fork-snapshot heap dump stops the program for; and the
# fixed cost of each: the time to start a program under it and its RSS.
#
# Usage: bench/alloc/run.sh [BUILD_DIR] [REPETITIONS]
#   BUILD_DIR defaults to build-alloc (configured with -DLIBDUMP_BUILD_BENCH=ON);
#   REPETITIONS rounds (default 3), each running every workload under every
#   allocator once; a cell is the best of its runs, a time ratio the median
#   of the per-round ratios.
#   ALLOC_BENCH_ONLY=larson,cross-A runs only the named workloads (and skips
#   the fork-pause and fixed-cost tables).
#   ALLOC_BENCH_BASELINE=/path/to/libdump.so adds a "before" column (another
#   build of libdump, e.g. the parent commit's) that is not counted as a peer.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-alloc}
reps=${2:-3}
cmake --build "$build" -j2 --target libdump_runtime alloc_bench_larson alloc_bench_cache_scratch \
  alloc_bench_prodcons alloc_bench_large alloc_bench_churn alloc_bench_fork_pause alloc_bench_cross_mix >/dev/null
lib=/usr/lib/x86_64-linux-gnu
exec python3 - "$build" "$reps" "$lib" "$root" <<'PY'
import os, sys, time, tempfile, shutil

build, reps, lib, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
allocators = [
    ("glibc", None),
    ("tcmalloc", f"{lib}/libtcmalloc_minimal.so.4"),
    ("jemalloc", f"{lib}/libjemalloc.so.2"),
    ("mimalloc", f"{lib}/libmimalloc.so.2"),
    ("libdump", f"{build}/libdump/libdump.so"),
]
if os.environ.get("ALLOC_BENCH_BASELINE"):
    allocators.append(("before", os.environ["ALLOC_BENCH_BASELINE"]))
allocators = [(n, p) for n, p in allocators if p is None or os.path.exists(p)]
b = f"{build}/bench/alloc"
tmp = tempfile.mkdtemp()
src = os.path.join(tmp, "prog.cc")
with open(src, "w") as f:
    f.write("""#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>
int main() {
  std::map<std::string, std::vector<int>> m;
  std::unordered_map<int, std::string> u;
  for (int i = 0; i < 1000; ++i) { m[std::to_string(i % 37)].push_back(i); u[i] = std::to_string(i); }
  std::regex r("([0-9]+)-([a-z]+)");
  std::smatch sm;
  std::string s = "123-abc";
  std::regex_match(s, sm, r);
  std::cout << m.size() << u.size() << sm[2] << "\\n";
}
""")
workloads = [
    ("larson", [f"{b}/alloc_bench_larson", "10"]),
    ("cache-scratch", [f"{b}/alloc_bench_cache_scratch", "10"]),
    ("cache-scratch-warm", [f"{b}/alloc_bench_cache_scratch", "10", "warm"]),
    ("prodcons", [f"{b}/alloc_bench_prodcons"]),
    ("large", [f"{b}/alloc_bench_large"]),
    ("churn", [f"{b}/alloc_bench_churn"]),
    ("cross-A", [f"{b}/alloc_bench_cross_mix", "A"]),
    ("cross-B", [f"{b}/alloc_bench_cross_mix", "B"]),
    ("g++ -O2", ["g++", "-std=c++20", "-O2", "-c", src, "-o", os.path.join(tmp, "prog.o")]),
]
only = os.environ.get("ALLOC_BENCH_ONLY")
if only:
    workloads = [w for w in workloads if w[0] in only.split(",")]

def run(cmd, preload, extra_env={}):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(extra_env)
    if preload:
        env["LD_PRELOAD"] = preload
    out = os.path.join(tmp, "out")
    rss = os.path.join(tmp, "rss")
    # Peak RSS through /usr/bin/time: a child forked from python inherits
    # python's ~10 MiB resident pages, and the kernel carries that high-water
    # mark across exec, so every small workload would read as 10 MiB.
    timed = ["/usr/bin/time", "-f", "%M", "-o", rss] + cmd
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.execvpe(timed[0], timed, env)
    _, status, ru = os.wait4(pid, 0)
    elapsed = time.monotonic() - t0
    if status != 0:
        sys.exit(f"{cmd[0]} failed under {preload}: status {status}")
    # CPU time (user + sys of the program, which /usr/bin/time waits for) as
    # well: on a loaded machine a thread that waits for a core costs wall
    # time only.
    cpu[(tuple(cmd), preload)] = ru.ru_utime + ru.ru_stime
    return elapsed, int(open(rss).read().split()[-1]) / 1024.0, open(out).read()

# Rounds: each round runs every workload under every allocator once, so a
# drift in the host's speed (this suite runs on shared VMs) reaches every
# allocator alike instead of whichever ran during a slow spell. A cell is the
# best of its REPS runs; a time ratio is the median over rounds of the ratio
# within one round (paired), which the drift cancels out of.
cpu = {}  # (command, preload) -> CPU time of its last run
times = {}  # (workload, allocator) -> time of each round
cpus = {}  # (workload, allocator) -> CPU time of each round
rss_best = {}
expected = {}
for r in range(reps):
    for wname, cmd in workloads:
        # The order rotates each round, so no allocator always runs right
        # after the same neighbour (a warm page cache, a cooling core).
        order = allocators[r % len(allocators):] + allocators[:r % len(allocators)]
        for aname, preload in order:
            t, rss, out = run(cmd, preload)
            if wname not in expected:
                expected[wname] = out
            elif out != expected[wname]:
                sys.exit(f"{wname}: output under {aname} differs from the first allocator's")
            times.setdefault((wname, aname), []).append(t)
            cpus.setdefault((wname, aname), []).append(cpu[(tuple(cmd), preload)])
            rss_best[(wname, aname)] = min(rss, rss_best.get((wname, aname), rss))
    print(f"  round {r + 1} of {reps} done", file=sys.stderr)
results = {k: (min(v), rss_best[k]) for k, v in times.items()}

def ratios(wname, a, bs, t=times):
    """a's time / the best of bs's times, in each round, sorted."""
    return sorted(t[(wname, a)][i] / min(t[(wname, b)][i] for b in bs) for i in range(reps))

def paired(wname, a, bs, t=times):
    """Median over rounds of a's time / the best of bs's times in that round."""
    rs = ratios(wname, a, bs, t)
    return rs[len(rs) // 2] if len(rs) % 2 else (rs[len(rs) // 2 - 1] + rs[len(rs) // 2]) / 2

def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

names = [a for a, _ in allocators]
print(f"\nbest of {reps} rounds; time in seconds, peak RSS in MiB\n")
print("| workload | " + " | ".join(f"{n} time | {n} RSS" for n in names) + " |")
print("|---" * (1 + 2 * len(names)) + "|")
for wname, _ in workloads:
    cells = []
    for n in names:
        t, r = results[(wname, n)]
        cells += [f"{t:.3f}", f"{r:.1f}"]
    print(f"| {wname} | " + " | ".join(cells) + " |")
peers = [n for n in names if n not in ("libdump", "before")]
if "libdump" in names:
    print("\nlibdump / peer (time: median of per-round ratios; peak RSS: best of rounds); below 1.00 means libdump is better\n")
    before = ["vs before"] if "before" in names else []
    print("| workload | " + " | ".join([f"vs {p}" for p in peers] + before) + " | vs best peer time | vs best peer RSS |")
    print("|---" * (3 + len(peers) + len(before)) + "|")
    for wname, _ in workloads:
        lr = results[(wname, "libdump")][1]
        cells = [f"{paired(wname, 'libdump', [p]):.2f} / {lr / results[(wname, p)][1]:.2f}" for p in peers]
        br = min(results[(wname, p)][1] for p in peers)
        if "before" in names:
            cells.append(f"{paired(wname, 'libdump', ['before']):.2f} / {lr / results[(wname, 'before')][1]:.2f}")
        print(f"| {wname} | " + " | ".join(cells) + f" | {paired(wname, 'libdump', peers):.2f} | {lr / br:.2f} |")
    fast = [p for p in peers if p != "glibc"]
    for label, t in (("wall time", times), ("CPU time, user + sys", cpus)):
        if not fast:
            break
        print(f"\nlibdump / best of {', '.join(fast)} ({label}, s, per round); medians of {reps} rounds, lowest-highest in brackets\n")
        print("| workload | libdump | " + " | ".join(fast) + " | libdump / best | spread |")
        print("|---" * (4 + len(fast)) + "|")
        for wname, _ in workloads:
            cell = lambda n: f"{median(t[(wname, n)]):.3f} ({min(t[(wname, n)]):.3f}-{max(t[(wname, n)]):.3f})"
            rs = ratios(wname, "libdump", fast, t)
            print(f"| {wname} | {cell('libdump')} | " + " | ".join(cell(p) for p in fast) +
                  f" | **{paired(wname, 'libdump', fast, t):.2f}** | {rs[0]:.2f}-{rs[-1]:.2f} |")
if only:
    shutil.rmtree(tmp)
    sys.exit(0)

print("\nfork() pause with a 1 GiB heap (best of 5 forks per run, best of REPS runs)\n")
print("| allocator | fork ms | ms per GiB of RSS | AnonHugePages GiB |")
print("|---|---|---|---|")
fork_runs = [(a, p, {}) for a, p in allocators]
if "libdump" in names:
    fork_runs.append(("libdump LIBDUMP_HUGEPAGES=0", dict(allocators)["libdump"], {"LIBDUMP_HUGEPAGES": "0"}))
for aname, preload, extra in fork_runs:
    best = None
    for _ in range(reps):
        _, _, out = run([f"{b}/alloc_bench_fork_pause", "1024"], preload, extra)
        f = out.split()
        ms, per, huge = float(f[f.index("fork") + 1]), float(f[f.index("per") - 2]), float(f[f.index("(AnonHugePages") + 1])
        if best is None or ms < best[0]:
            best = (ms, per, huge)
    print(f"| {aname} | {best[0]:.2f} | {best[1]:.2f} | {best[2]:.2f} |")

# What every process pays for the preload before it allocates anything: the
# libraries loaded and the allocator's own start-up. A shell under the
# allocator starts /bin/true (also under it) 300 times.
starts = 300
print(f"\nfixed cost: ms per start of /bin/true ({starts} started by sh, both preloaded; best of REPS runs) and its peak RSS\n")
print("| allocator | ms per start | peak RSS MiB |")
print("|---|---|---|")
loop = ["sh", "-c", f"i=0; while [ $i -lt {starts} ]; do /bin/true; i=$((i+1)); done"]
for aname, preload in allocators:
    ms = min(run(loop, preload)[0] for _ in range(reps)) / starts * 1000
    rss = min(run(["/bin/true"], preload)[1] for _ in range(reps))
    print(f"| {aname} | {ms:.2f} | {rss:.2f} |")
shutil.rmtree(tmp)
PY
