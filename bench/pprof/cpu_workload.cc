// CPU-bound 2-thread workload for the CPU profiler overhead comparison:
// fixed work in two threads, prints the process's CPU seconds for it.
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

static double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

__attribute__((noinline)) uint64_t Work(uint64_t n, uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < n; ++i) x = x * 6364136223846793005ULL + (x >> 17);
  return x;
}

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1500000000ULL;
  const double t0 = CpuSeconds();
  uint64_t r[2];
  std::thread a([&] { r[0] = Work(n, 1); });
  std::thread b([&] { r[1] = Work(n, 2); });
  a.join();
  b.join();
  std::printf("%.4f\n", CpuSeconds() - t0);
  return static_cast<int>((r[0] ^ r[1]) & 1) * 0;
}
