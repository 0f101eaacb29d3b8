// In-process A/B runs for the profiler overhead benchmarks. This host drifts
// between a fast and a slow mode for seconds at a time, so separate processes
// differ by more than a profiler costs; two blocks of the same work a moment
// apart share the mode. Each pair runs one block with the profiler off and
// one with it on, alternating which goes first (a drift inside a pair then
// cancels), and the median of the per-pair CPU ratios is the overhead. With
// the profiler never switched on it measures the method's own noise (A/A).
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

namespace bench {

// Every thread's CPU time: a profiler's own threads are part of its cost.
inline double ProcessCpuNs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// set_on(bool) switches the profiler outside the timed blocks; block() runs
// `units` units of work (operations, iterations). Prints one line:
//   LABEL, P pairs of U UNITs: median +x% (quartiles +a% .. +b%), totals +t%, n ns/UNIT off
// always_inline, like the callers' lambdas: the work then runs in the
// caller's frame, and a heap sample's stack keeps the shape the benchmark
// was written for (alloc_workload.cc). Returns the CPU time of the blocks
// with the profiler on.
template <typename SetOn, typename Block>
__attribute__((always_inline)) inline double AlternateBlocks(const char* label, int pairs, long units, const char* unit,
                                                             SetOn set_on, Block block) {
  std::vector<double> ratios;
  double off_total = 0, on_total = 0;
  for (int k = 0; k < pairs; ++k) {
    double t[2];
    for (int j = 0; j < 2; ++j) {
      const int on = (j + k) & 1;  // pair k runs off first when k is even
      set_on(on != 0);
      const double t0 = ProcessCpuNs();
      block();
      t[on] = ProcessCpuNs() - t0;
    }
    ratios.push_back(t[1] / t[0]);
    off_total += t[0];
    on_total += t[1];
  }
  set_on(false);
  std::sort(ratios.begin(), ratios.end());
  const auto pct = [](double r) { return (r - 1) * 100; };
  std::printf("%s, %d pairs of %ld %ss: median %+.2f%% (quartiles %+.2f%% .. %+.2f%%), totals %+.2f%%, "
              "%.2f ns/%s off\n",
              label, pairs, units, unit, pct(ratios[ratios.size() / 2]), pct(ratios[ratios.size() / 4]),
              pct(ratios[ratios.size() * 3 / 4]), pct(on_total / off_total),
              off_total / (static_cast<double>(units) * pairs), unit);
  return on_total;
}

// Runs worker(i) on threads 0 .. threads-1 and returns the wall seconds until
// the last has joined (the lock benchmarks' unit of work).
template <typename Worker>
double WallSecondsOfThreads(int threads, Worker worker) {
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  std::vector<std::thread> t;
  for (int i = 0; i < threads; ++i) t.emplace_back(worker, i);
  for (std::thread& th : t) th.join();
  clock_gettime(CLOCK_MONOTONIC, &b);
  return static_cast<double>(b.tv_sec - a.tv_sec) + 1e-9 * static_cast<double>(b.tv_nsec - a.tv_nsec);
}

}  // namespace bench
