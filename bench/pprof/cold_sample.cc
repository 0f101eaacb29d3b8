// Cost of one heap sample as a busy program pays it: between two samples the
// program evicts the profiler's and the allocator's lines from L1 (and some
// from L2), so the whole sampled malloc + free runs cold. Each round first
// touches kEvictLines random lines of a 16 MiB buffer, as the mixed workload
// of alloc_workload.cc does in the ~212 operations between its samples, then
// times one malloc of kSize bytes and the free of an object allocated
// kWindow rounds earlier (a sampled object is freed long after its sample, as
// in a program). Rounds with sampling off (rate 0) and with every allocation
// sampled alternate, each with its own window, so drift hits both; the
// difference of the two means is the cost of one sample, allocation and free
// together.
//
// Usage: bench_pprof_cold_sample [ROUNDS]
#include <time.h>
#include <x86intrin.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "libdump/profiler.h"

namespace {

constexpr size_t kBuffer = 16 << 20;
constexpr int kEvictLines = 850;  // ~4 lines per operation x 212 operations
constexpr size_t kSize = 1000;
constexpr int kWindow = 256;

uint64_t g_x = 88172645463325252ULL;
uint64_t Next() {
  g_x ^= g_x << 13;
  g_x ^= g_x >> 7;
  g_x ^= g_x << 17;
  return g_x;
}

__attribute__((noinline)) void Evict(char* buf) {
  for (int i = 0; i < kEvictLines; ++i) {
    char* c = buf + (Next() % (kBuffer / 64)) * 64;
    *c = static_cast<char>(*c + 1);
  }
  asm volatile("" : : "r"(buf) : "memory");
}

// Replaces *slot with a new object.
__attribute__((noinline)) uint64_t TimedPair(void** slot) {
  _mm_lfence();
  const uint64_t t0 = __rdtsc();
  _mm_lfence();
  void* p = std::malloc(kSize);
  asm volatile("" : : "r"(p) : "memory");
  std::free(*slot);
  *slot = p;
  _mm_lfence();
  const uint64_t t1 = __rdtsc();
  return t1 - t0;
}

// TSC ticks per nanosecond, over 50 ms of the monotonic clock.
double TicksPerNs() {
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  const uint64_t t0 = __rdtsc();
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 50000000L);
  const uint64_t t1 = __rdtsc();
  return static_cast<double>(t1 - t0) /
         static_cast<double>((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
}

}  // namespace

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 20000;
  if (!libdump::InstallHeapProfiler()) {
    std::fprintf(stderr, "bench_pprof_cold_sample: libdump's allocator is not the process's malloc\n");
    return 1;
  }
  std::vector<char> buf(kBuffer, 1);
  // Rate 2: every allocation of 2 bytes or more is sampled, through the same
  // exponential draw as at 512 KiB (rate 1 skips it).
  const int64_t rates[2] = {0, 2};
  uint64_t ticks[2] = {0, 0};
  static void* window[2][kWindow];
  for (int warm = 0; warm < 4 * kWindow; ++warm) {
    libdump::SetMemProfileRate(rates[warm & 1]);
    TimedPair(&window[warm & 1][(warm >> 1) % kWindow]);
  }
  for (long r = 0; r < rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      libdump::SetMemProfileRate(rates[k]);
      Evict(buf.data());
      ticks[k] += TimedPair(&window[k][r % kWindow]);
    }
  }
  libdump::SetMemProfileRate(0);
  for (auto& w : window) {
    for (void* p : w) std::free(p);
  }
  const double tpn = TicksPerNs();
  const double off = static_cast<double>(ticks[0]) / static_cast<double>(rounds) / tpn;
  const double on = static_cast<double>(ticks[1]) / static_cast<double>(rounds) / tpn;
  std::printf("cold malloc+free, ns: not sampled %.1f, sampled %.1f, one sample %.1f\n", off, on, on - off);
  return 0;
}
