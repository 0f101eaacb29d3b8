// Allocation-heavy workload for the heap profiler overhead comparison: a
// window of live objects, replaced one at a time through malloc/free
// (whichever malloc LD_PRELOAD supplies). Prints CPU ns per malloc+free pair.
//
// Usage: bench_pprof_alloc [OPS] [mixed|small]
//   mixed (default): 16 B .. 4 KiB and 1 in 256 of 64 KiB: 2.47 KiB of
//     libdump slot per allocation, a sample every ~212 at the 512 KiB rate.
//   small: 16 .. 256 B (node-based containers, strings): 148 B of slot, a
//     sample every ~3,550.
// The profiler's cost per operation is (mean slot size / rate) x (cost of
// one sample): the same profiler costs ~17x more per operation on the first
// (docs/sampling.md).
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char** argv) {
  const long ops = argc > 1 ? std::atol(argv[1]) : 20000000;
  const bool small = argc > 2 && std::strcmp(argv[2], "small") == 0;
  constexpr int kWindow = 4096;
  static void* live[kWindow];
  uint64_t x = 88172645463325252ULL;
  const double t0 = CpuSeconds();
  for (long i = 0; i < ops; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int slot = static_cast<int>(x % kWindow);
    std::free(live[slot]);
    // Mostly small objects, the odd large one: 16 B .. 4 KiB, 1 in 256 64 KiB.
    const size_t size = small ? 16 + ((x >> 40) % 241) : (x >> 32) % 256 == 0 ? 65536 : 16 + ((x >> 40) % 4080);
    live[slot] = std::malloc(size);
    static_cast<char*>(live[slot])[0] = 1;
  }
  const double t = CpuSeconds() - t0;
  for (void* p : live) std::free(p);
  std::printf("%.2f\n", t * 1e9 / static_cast<double>(ops));
  return 0;
}
