// A lock-heavy workload for the block and mutex profiles' overhead: 8
// threads take one of 2 mutexes for a short critical section, and every 16
// operations hand a token to their partner thread through a condition
// variable (std::mutex, std::condition_variable: pthread underneath).
//   bench_pprof_locks OPS                  one run, prints wall seconds
//   bench_pprof_locks OPS alternate PAIRS  profiles off and on (block rate
//       10 us, mutex fraction 100, Go's usual settings) in alternating
//       blocks of one process: the medians of the per-pair CPU-time and
//       wall-time ratios
//   bench_pprof_locks OPS aa PAIRS         the same with both blocks off (A/A)
//   bench_pprof_locks OPS uncontended      one thread, OPS lock+unlock pairs of an
//       uncontended mutex: ns of thread CPU per pair (the fast path alone)
// Built twice: with the pthread interposition linked (profiles settable)
// and without it (bench_pprof_locks_plain: what a program pays for nothing).
#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "alternation.h"

#ifdef LIBDUMP_LOCK_BENCH_PROFILED
#include "libdump/profiler.h"
#endif

namespace {

constexpr int kThreads = 8, kLocks = 2, kHandoffEvery = 16;

struct alignas(64) Shared {
  std::mutex mu;
  long counter = 0;
};
Shared g_locks[kLocks];

// One condition variable hand-off channel per pair of threads.
struct alignas(64) Pair {
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;  // which of the two may go
};
Pair g_pairs[kThreads / 2];

void Worker(int id, long ops) {
  Pair& p = g_pairs[id / 2];
  const int me = id % 2;
  unsigned x = static_cast<unsigned>(id) * 2654435761u + 1;
  for (long i = 0; i < ops; ++i) {
    x = x * 1664525u + 1013904223u;
    Shared& s = g_locks[(x >> 16) % kLocks];
    {
      std::lock_guard<std::mutex> l(s.mu);
      s.counter += x & 7;
    }
    if (i % kHandoffEvery == kHandoffEvery - 1) {
      std::unique_lock<std::mutex> l(p.mu);
      p.cv.wait(l, [&] { return p.turn == me; });
      p.turn = 1 - me;
      p.cv.notify_one();
    }
  }
  // The partner may wait for one last turn.
  std::lock_guard<std::mutex> l(p.mu);
  p.turn = 1 - me;
  p.cv.notify_one();
}

double Block(long ops) {
  for (Pair& p : g_pairs) p.turn = 0;
  return bench::WallSecondsOfThreads(kThreads, [ops](int i) { Worker(i, ops / kThreads); });
}

// LOCKS_PROFILES=block or mutex turns only that one on (where the cost
// goes); both by default.
void SetProfiles(bool on) {
#ifdef LIBDUMP_LOCK_BENCH_PROFILED
  static const char* only = std::getenv("LOCKS_PROFILES");
  const bool block = only == nullptr || std::strcmp(only, "mutex") != 0;
  const bool mutex = only == nullptr || std::strcmp(only, "block") != 0;
  libdump::SetBlockProfileRate(on && block ? 10000 : 0);
  libdump::SetMutexProfileFraction(on && mutex ? 100 : 0);
#else
  (void)on;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OPS [alternate|aa PAIRS]\n", argv[0]);
    return 2;
  }
  const long ops = std::atol(argv[1]);
  if (argc == 3 && std::strcmp(argv[2], "uncontended") == 0) {
    std::mutex m;
    timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (long i = 0; i < ops; ++i) {
      m.lock();
      asm volatile("" ::: "memory");
      m.unlock();
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    std::printf("%.2f\n", (1e9 * static_cast<double>(b.tv_sec - a.tv_sec) + static_cast<double>(b.tv_nsec - a.tv_nsec)) /
                              static_cast<double>(ops));
    return 0;
  }
  if (argc < 4) {
    std::printf("%.4f\n", Block(ops));
    return 0;
  }
  const bool aa = std::strcmp(argv[2], "aa") == 0;
  const int pairs = std::atoi(argv[3]);
  // Both clocks per block: wall time (a lock workload's cost is partly its
  // waiting) and the process's CPU time (less sensitive to other load on a
  // shared host).
  std::vector<double> wall_ratios, cpu_ratios;
  double off = 0, on = 0, cpu_off = 0, cpu_on = 0;
  for (int k = 0; k < pairs; ++k) {
    double t[2], c[2];
    for (int j = 0; j < 2; ++j) {
      const int is_on = (j + k) & 1;
      SetProfiles(is_on != 0 && !aa);
      const double c0 = bench::ProcessCpuNs();
      t[is_on] = Block(ops);
      c[is_on] = bench::ProcessCpuNs() - c0;
    }
    SetProfiles(false);
    wall_ratios.push_back(t[1] / t[0]);
    cpu_ratios.push_back(c[1] / c[0]);
    off += t[0];
    on += t[1];
    cpu_off += c[0];
    cpu_on += c[1];
  }
  std::sort(wall_ratios.begin(), wall_ratios.end());
  std::sort(cpu_ratios.begin(), cpu_ratios.end());
  const auto pct = [](double r) { return (r - 1) * 100; };
  const char* only = std::getenv("LOCKS_PROFILES");
  const char* label = aa ? "libdump A/A (both off)"
                      : only == nullptr ? "libdump block 10us + mutex 1/100"
                      : std::strcmp(only, "block") == 0 ? "libdump block 10us alone"
                                                        : "libdump mutex 1/100 alone";
  std::printf("%s, %d pairs of %ld ops: CPU median %+.2f%% (quartiles %+.2f%% .. %+.2f%%), totals %+.2f%%; "
              "wall median %+.2f%% (quartiles %+.2f%% .. %+.2f%%); %.0f ns/op off\n",
              label, pairs, ops, pct(cpu_ratios[cpu_ratios.size() / 2]), pct(cpu_ratios[cpu_ratios.size() / 4]),
              pct(cpu_ratios[cpu_ratios.size() * 3 / 4]), pct(cpu_on / cpu_off),
              pct(wall_ratios[wall_ratios.size() / 2]), pct(wall_ratios[wall_ratios.size() / 4]),
              pct(wall_ratios[wall_ratios.size() * 3 / 4]), off / pairs / static_cast<double>(ops) * 1e9);
  return 0;
}
