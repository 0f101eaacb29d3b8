// The flight recorder's cost, side by side in one process (run.sh):
//
//   off   ns per annotation with no recorder running: a loop of C++ regions,
//         of C regions and of logs, each against the same loop bare;
//   on    ns per region with the recorder running (begin + end events),
//         named by a string (copied into both events) and by an interned
//         trace::Name (an id), beside the floor: the two reads of the event
//         clock (flight_recorder_clock.h) a recorded region needs at least;
//   heavy a region-heavy workload, about 1 M regions per second of CPU
//         (each around ~1 us of arithmetic), in blocks alternately with the
//         recorder stopped and running (default window): the ratio of the
//         process's CPU time, recorder threads and CPU samples included.
//
// Usage: bench_flight_recorder [PAIRS]
//        bench_flight_recorder 0 count   100 000 recorded regions of each
//        kind and nothing else, for callgrind's instruction counts:
//   valgrind --tool=callgrind --toggle-collect='*NamedRegions*' bench_flight_recorder 0 count
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "samplers/flight_recorder/flight_recorder_clock.h"
#include "libdump/flight_recorder.h"

namespace {

int64_t CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The compiler may not drop or merge iterations: each step depends on the
// last, and the barrier hides the loop from the optimizer as a region's
// call would.
__attribute__((noinline)) uint64_t Bare(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1;
    asm volatile("" : "+r"(x));
  }
  return x;
}

__attribute__((noinline)) uint64_t Regions(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    libdump::trace::Region r("bench");
    x = x * 6364136223846793005ULL + 1;
    asm volatile("" : "+r"(x));
  }
  return x;
}

constinit libdump::trace::Name kBench("bench");
__attribute__((noinline)) uint64_t NamedRegions(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    libdump::trace::Region r(kBench);
    x = x * 6364136223846793005ULL + 1;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// What a recorded region costs at least: two reads of the event clock.
__attribute__((noinline)) uint64_t TwoTicks(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    x += static_cast<uint64_t>(libdump::samplers::flight::Ticks());
    x = x * 6364136223846793005ULL + 1;
    asm volatile("" : "+r"(x));
    x += static_cast<uint64_t>(libdump::samplers::flight::Ticks());
  }
  return x;
}

__attribute__((noinline)) uint64_t CRegions(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    libdump_region r;
    libdump_region_begin(&r, "bench", 0);
    x = x * 6364136223846793005ULL + 1;
    asm volatile("" : "+r"(x));
    libdump_region_end(&r);
  }
  return x;
}

__attribute__((noinline)) uint64_t Logs(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    libdump::trace::Log("bench", "message");
    x = x * 6364136223846793005ULL + 1;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// ~1 us of arithmetic per region (1.3 ns an iteration here).
constexpr uint64_t kWorkPerRegion = 750;
__attribute__((noinline)) uint64_t Heavy(uint64_t regions, uint64_t x) {
  for (uint64_t i = 0; i < regions; ++i) {
    libdump::trace::Region r("request");
    x = Bare(kWorkPerRegion, x);
  }
  return x;
}

constinit libdump::trace::Name kRequest("request");
__attribute__((noinline)) uint64_t HeavyNamed(uint64_t regions, uint64_t x) {
  for (uint64_t i = 0; i < regions; ++i) {
    libdump::trace::Region r(kRequest);
    x = Bare(kWorkPerRegion, x);
  }
  return x;
}

// The same with only what a recorded region must do at least: read the
// event clock at its begin and end.
__attribute__((noinline)) uint64_t HeavyClockOnly(uint64_t regions, uint64_t x) {
  for (uint64_t i = 0; i < regions; ++i) {
    x += static_cast<uint64_t>(libdump::samplers::flight::Ticks());
    x = Bare(kWorkPerRegion, x);
    x += static_cast<uint64_t>(libdump::samplers::flight::Ticks());
  }
  return x;
}

template <class F>
double NsPer(F f, uint64_t n, uint64_t* sink) {
  const int64_t t0 = CpuNs();
  *sink += f(n, *sink);
  return static_cast<double>(CpuNs() - t0) / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 20;
  if (argc > 2 && std::string(argv[2]) == "count") {
    libdump::FlightRecorder rec;
    if (!rec.Start()) return 1;
    uint64_t x = 1;
    x = NamedRegions(1000, x);  // the name interned, the thread in the window
    x = Regions(100000, NamedRegions(100000, x));
    rec.Stop();
    return x == 42 ? 1 : 0;
  }
  const bool heavy_only = argc > 2 && std::string(argv[2]) == "heavy";
  uint64_t sink = 1;
  const uint64_t kN = heavy_only ? 1000 : 50000000;

  // Off: each loop against the bare loop, interleaved, medians of 7.
  std::vector<double> bare, cxx, c, logs;
  for (int r = 0; r < 7; ++r) {
    bare.push_back(NsPer(Bare, kN, &sink));
    cxx.push_back(NsPer(Regions, kN, &sink));
    c.push_back(NsPer(CRegions, kN, &sink));
    logs.push_back(NsPer(Logs, kN, &sink));
  }
  const double b = Median(bare);
  std::printf("off: bare loop %.2f ns/iter; added per annotation: C++ region %.2f ns, C region %.2f ns, log %.2f ns\n",
              b, Median(cxx) - b, Median(c) - b, Median(logs) - b);

  libdump::FlightRecorder rec;
  if (!rec.Start()) return 1;
  std::vector<double> on, on_named, floor;
  for (int r = 0; r < 7; ++r) {
    on.push_back(NsPer(Regions, 5000000, &sink) - b);
    on_named.push_back(NsPer(NamedRegions, 5000000, &sink) - b);
    floor.push_back(NsPer(TwoTicks, 5000000, &sink) - b);
  }
  std::printf("on: added per C++ region (begin + end events): named by a string %.1f ns, by a trace::Name %.1f ns; "
              "floor (two event-clock reads, %s) %.1f ns\n",
              Median(on), Median(on_named), libdump::samplers::flight::g_use_tsc ? "rdtsc" : "clock_gettime",
              Median(floor));
  rec.Stop();

  // Heavy: blocks of ~0.25 s, recorder stopped then running, PAIRS pairs.
  uint64_t per_block = 1000;
  {
    const int64_t t0 = CpuNs();
    sink += Heavy(per_block, sink);
    const int64_t dt = std::max<int64_t>(CpuNs() - t0, 1);
    per_block = static_cast<uint64_t>(250e6 / static_cast<double>(dt) * static_cast<double>(per_block));
  }
  // A/A (stopped / stopped), the clock alone, then the recorder running.
  std::vector<double> aa, clock_only, ratio, ratio_named;
  double regions_per_cpu_s = 0;
  for (int p = 0; p < pairs; ++p) {
    int64_t t0 = CpuNs();
    sink += Heavy(per_block, sink);
    const double off_ns = static_cast<double>(CpuNs() - t0);
    regions_per_cpu_s = static_cast<double>(per_block) * 1e9 / off_ns;
    t0 = CpuNs();
    sink += Heavy(per_block, sink);
    aa.push_back(static_cast<double>(CpuNs() - t0) / off_ns);
    t0 = CpuNs();
    sink += HeavyClockOnly(per_block, sink);
    clock_only.push_back(static_cast<double>(CpuNs() - t0) / off_ns);
    if (!rec.Start()) return 1;
    t0 = CpuNs();
    sink += Heavy(per_block, sink);
    ratio.push_back(static_cast<double>(CpuNs() - t0) / off_ns);
    t0 = CpuNs();
    sink += HeavyNamed(per_block, sink);
    ratio_named.push_back(static_cast<double>(CpuNs() - t0) / off_ns);
    rec.Stop();
  }
  std::printf("heavy: %.2f M regions per CPU second; CPU against the recorder stopped, medians of %d blocks:\n"
              "  stopped again (A/A) %.4f; two event-clock reads per region, no recorder %.4f (%+.2f %%);\n"
              "  recorder running: regions named by a string %.4f (%+.2f %%), by a trace::Name %.4f (%+.2f %%)\n",
              regions_per_cpu_s / 1e6, pairs, Median(aa), Median(clock_only), (Median(clock_only) - 1) * 100,
              Median(ratio), (Median(ratio) - 1) * 100, Median(ratio_named), (Median(ratio_named) - 1) * 100);
  return sink == 42 ? 1 : 0;
}
