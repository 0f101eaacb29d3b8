// Allocation-heavy workload for the heap profiler overhead comparison: a
// window of live objects, replaced one at a time through malloc/free
// (whichever malloc LD_PRELOAD supplies). Prints CPU ns per malloc+free pair.
//
// Usage: bench_pprof_alloc [OPS] [mixed|small] [alternate RATE PAIRS]
//   mixed (default): 16 B .. 4 KiB and 1 in 256 of 64 KiB: 2.47 KiB of
//     libdump slot per allocation, a sample every ~212 at the 512 KiB rate.
//   small: 16 .. 256 B (node-based containers, strings): 148 B of slot, a
//     sample every ~3,550.
// The profiler's cost per operation is (mean slot size / rate) x (cost of
// one sample): the same profiler costs ~17x more per operation on the first
// (docs/sampling.md).
//
// alternate: under libdump with libdumpprof.so, switch MemProfileRate between
// 0 and RATE every OPS / (2 PAIRS) operations and print the median and
// quartiles of the per-pair CPU ratios (RATE / off), as alternation.h
// explains. With RATE 0 it measures the method's own noise (an A/A test).
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "alternation.h"

namespace {

constexpr int kWindow = 4096;
void* g_live[kWindow];
uint64_t g_x = 88172645463325252ULL;

// Inlined into main, as the loop was before it had two callers: a sample's
// stack is then main's call site of malloc and the three frames that start
// the process, a shape the frame-pointer walk finishes on its own. One more
// frame without a frame pointer (this binary is built without them) and
// every sample would be redone with libunwind, at twice the cost.
__attribute__((always_inline)) inline void Run(long ops, bool small) {
  uint64_t x = g_x;
  for (long i = 0; i < ops; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int slot = static_cast<int>(x % kWindow);
    std::free(g_live[slot]);
    // Mostly small objects, the odd large one: 16 B .. 4 KiB, 1 in 256 64 KiB.
    const size_t size = small ? 16 + ((x >> 40) % 241) : (x >> 32) % 256 == 0 ? 65536 : 16 + ((x >> 40) % 4080);
    g_live[slot] = std::malloc(size);
    static_cast<char*>(g_live[slot])[0] = 1;
  }
  g_x = x;
}

__attribute__((always_inline)) inline int Alternate(long ops, bool small, long rate, int pairs) {
  // libdump::SetMemProfileRate, from libdumpprof.so (LD_PRELOAD): looked up
  // so that the same binary also runs under the peers' allocators.
  using SetRate = void (*)(int64_t);
  const auto set = reinterpret_cast<SetRate>(dlsym(RTLD_DEFAULT, "_ZN7libdump17SetMemProfileRateEl"));
  const long block = pairs < 1 ? 0 : ops / (2L * pairs);
  if (set == nullptr || block < 1) {
    std::fprintf(stderr, "bench_pprof_alloc: alternate needs PAIRS >= 1, OPS >= 2 PAIRS and libdumpprof.so preloaded\n");
    return 1;
  }
  set(0);
  Run(block, small);  // warm up: the window fills, spans and buckets exist
  char label[64];
  std::snprintf(label, sizeof label, "rate %ld vs 0", rate);
  bench::AlternateBlocks(
      label, pairs, block, "op", [&](bool on) { set(on ? rate : 0); },
      [&]() __attribute__((always_inline)) { Run(block, small); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long ops = argc > 1 ? std::atol(argv[1]) : 20000000;
  const bool small = argc > 2 && std::strcmp(argv[2], "small") == 0;
  if (argc > 5 && std::strcmp(argv[3], "alternate") == 0) {
    return Alternate(ops, small, std::atol(argv[4]), std::atoi(argv[5]));
  }
  const double t0 = bench::ProcessCpuNs();
  Run(ops, small);
  const double t = bench::ProcessCpuNs() - t0;
  for (void* p : g_live) std::free(p);
  std::printf("%.2f\n", t / static_cast<double>(ops));
  return 0;
}
