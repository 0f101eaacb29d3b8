// The lock workload of lock_workload.cc on Abseil's absl::Mutex and
// absl::CondVar, for the peer line of run_locks.sh: 8 threads, 2 mutexes, a
// condition-variable hand-off every 16 operations.
//   bench_pprof_locks_absl OPS alternate PAIRS  profiling off and on in
//       alternating blocks of one process (medians of per-pair CPU-time and
//       wall-time ratios)
//   bench_pprof_locks_absl OPS aa PAIRS         both blocks off (A/A)
// "On" is a mutex profile at Go's fraction built on Abseil's hook,
// absl::RegisterMutexProfiler: Abseil calls it on each contended release
// with the cycles waited (the holder is charged, as libdump's mutex profile
// does); one call in 100 takes the releasing stack (absl::GetStackTrace)
// and adds the wait to that stack's bucket. Abseil ships the hook and no
// profile, so this is the least such a profile costs. The hook stays
// registered (Abseil allows one registration): "off" is its early return.
#include <time.h>

#include <absl/debugging/stacktrace.h>
#include <absl/synchronization/mutex.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "alternation.h"

namespace {

constexpr int kThreads = 8, kLocks = 2, kHandoffEvery = 16, kFraction = 100;

struct alignas(64) Shared {
  absl::Mutex mu;
  long counter = 0;
};
Shared g_locks[kLocks];

struct alignas(64) Pair {
  absl::Mutex mu;
  absl::CondVar cv;
  int turn = 0;
};
Pair g_pairs[kThreads / 2];

// The profile: buckets by stack hash, open addressing, atomics only (the
// hook runs inside Abseil's unlock).
constexpr size_t kBuckets = 4096;
struct Bucket {
  std::atomic<uint64_t> hash{0};
  std::atomic<int64_t> cycles{0}, count{0};
};
Bucket g_buckets[kBuckets];
std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_events{0};

void Profile(int64_t wait_cycles) {
  if (!g_on.load(std::memory_order_relaxed)) return;
  if (g_events.fetch_add(1, std::memory_order_relaxed) % kFraction != 0) return;
  void* pcs[64];
  const int depth = absl::GetStackTrace(pcs, 64, 1);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < depth; ++i) h = (h ^ reinterpret_cast<uintptr_t>(pcs[i])) * 0x100000001b3ULL;
  if (h == 0) h = 1;
  for (size_t i = 0; i < kBuckets; ++i) {
    Bucket& b = g_buckets[(h + i) % kBuckets];
    uint64_t cur = b.hash.load(std::memory_order_acquire);
    if (cur == 0 && b.hash.compare_exchange_strong(cur, h)) cur = h;
    if (cur == h) {
      b.cycles.fetch_add(wait_cycles * kFraction, std::memory_order_relaxed);
      b.count.fetch_add(kFraction, std::memory_order_relaxed);
      return;
    }
  }
}

void Worker(int id, long ops) {
  Pair& p = g_pairs[id / 2];
  const int me = id % 2;
  unsigned x = static_cast<unsigned>(id) * 2654435761u + 1;
  for (long i = 0; i < ops; ++i) {
    x = x * 1664525u + 1013904223u;
    Shared& s = g_locks[(x >> 16) % kLocks];
    {
      absl::MutexLock l(&s.mu);
      s.counter += x & 7;
    }
    if (i % kHandoffEvery == kHandoffEvery - 1) {
      absl::MutexLock l(&p.mu);
      while (p.turn != me) p.cv.Wait(&p.mu);
      p.turn = 1 - me;
      p.cv.Signal();
    }
  }
  absl::MutexLock l(&p.mu);
  p.turn = 1 - me;
  p.cv.Signal();
}

double Block(long ops) {
  for (Pair& p : g_pairs) p.turn = 0;
  return bench::WallSecondsOfThreads(kThreads, [ops](int i) { Worker(i, ops / kThreads); });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OPS alternate|aa PAIRS\n", argv[0]);
    return 2;
  }
  absl::RegisterMutexProfiler(Profile);
  const long ops = std::atol(argv[1]);
  const bool aa = std::strcmp(argv[2], "aa") == 0;
  const int pairs = std::atoi(argv[3]);
  std::vector<double> wall_ratios, cpu_ratios;
  double off = 0, cpu_off = 0, cpu_on = 0;
  for (int k = 0; k < pairs; ++k) {
    double t[2], c[2];
    for (int j = 0; j < 2; ++j) {
      const int is_on = (j + k) & 1;
      g_on.store(is_on != 0 && !aa);
      const double c0 = bench::ProcessCpuNs();
      t[is_on] = Block(ops);
      c[is_on] = bench::ProcessCpuNs() - c0;
    }
    g_on.store(false);
    wall_ratios.push_back(t[1] / t[0]);
    cpu_ratios.push_back(c[1] / c[0]);
    off += t[0];
    cpu_off += c[0];
    cpu_on += c[1];
  }
  std::sort(wall_ratios.begin(), wall_ratios.end());
  std::sort(cpu_ratios.begin(), cpu_ratios.end());
  int64_t sampled = 0;
  for (const Bucket& b : g_buckets) sampled += b.count.load() / kFraction;
  const unsigned long long reported = g_events.load();
  const auto pct = [](double r) { return (r - 1) * 100; };
  std::printf("%s, %d pairs of %ld ops: CPU median %+.2f%% (quartiles %+.2f%% .. %+.2f%%), totals %+.2f%%; "
              "wall median %+.2f%% (quartiles %+.2f%% .. %+.2f%%); %.0f ns/op off; %llu contended releases reported while on, %lld stacks taken\n",
              aa ? "abseil A/A (both off)" : "abseil RegisterMutexProfiler 1/100", pairs, ops,
              pct(cpu_ratios[cpu_ratios.size() / 2]), pct(cpu_ratios[cpu_ratios.size() / 4]),
              pct(cpu_ratios[cpu_ratios.size() * 3 / 4]), pct(cpu_on / cpu_off),
              pct(wall_ratios[wall_ratios.size() / 2]), pct(wall_ratios[wall_ratios.size() / 4]),
              pct(wall_ratios[wall_ratios.size() * 3 / 4]), off / pairs / static_cast<double>(ops) * 1e9,
              reported, static_cast<long long>(sampled));
  return 0;
}
