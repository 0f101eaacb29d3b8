// Who gets the CPU when it goes into code without a frame pointer: two
// threads, each running one burner (its own function) for fixed work, then
// printing the process's CPU seconds and each thread's. Profiled by the
// preloaded profiler (libdumpprof.so with LIBDUMP_CPUPROFILE, or gperftools'
// libprofiler.so with CPUPROFILE); attribution.sh reads each profile with
// go tool pprof -top -cum and compares the burners' cumulative time with
// their threads' CPU time.
//
// Usage: bench_pprof_attribution clock|libc|leaf [SCALE]
//   clock: BurnClockOne, BurnClockTwo: arithmetic and clock_gettime
//          (CLOCK_THREAD_CPUTIME_ID: the vDSO, then the kernel)
//   libc:  BurnCopy (memcpy) and BurnStrlen (strlen) of 1 MiB buffers
//   leaf:  BurnAsm (an assembly leaf with CFI, rbp a counter) and BurnLeaf
//          (a leaf built with -O2 -fomit-frame-pointer, rbp a counter): the
//          attribution test's leaves (samplers/testing/cpu_attribution_leaf.h)
#include <time.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "samplers/testing/cpu_attribution_leaf.h"

namespace {

#define NO_TAIL_CALL asm volatile("" ::: "memory")
constexpr size_t kBuffer = 1 << 20;
long g_scale = 1;

double ThreadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

__attribute__((noipa)) uint64_t Clock(long n, uint64_t k) {
  uint64_t x = 1;
  for (long i = 0; i < n; ++i) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    x += static_cast<uint64_t>(ts.tv_nsec);
    for (int j = 0; j < 300; ++j) {
      x = x * k + (x >> 17);
      asm volatile("" : "+r"(x));
    }
  }
  return x;
}
__attribute__((noipa)) uint64_t BurnClockOne() {
  const uint64_t x = Clock(750000 * g_scale, 6364136223846793005ULL);
  NO_TAIL_CALL;
  return x;
}
__attribute__((noipa)) uint64_t BurnClockTwo() {
  const uint64_t x = Clock(750000 * g_scale, 6364136223846793007ULL);
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnCopy() {
  std::vector<char> a(kBuffer, 'a'), b(kBuffer);
  uint64_t x = 0;
  for (long i = 0; i < 50000 * g_scale; ++i) {
    std::memcpy(b.data(), a.data(), kBuffer);
    asm volatile("" ::"r"(b.data()) : "memory");
    x += static_cast<uint64_t>(b[x % kBuffer]);
  }
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnStrlen() {
  std::string s(kBuffer, 's');
  uint64_t x = 0;
  for (long i = 0; i < 100000 * g_scale; ++i) {
    asm volatile("" ::"r"(s.data()) : "memory");
    x += std::strlen(s.c_str());
  }
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnAsm() {
  uint64_t x = 0;
  for (long i = 0; i < 1000 * g_scale; ++i) x += libdump_attribution_asm_spin(1000000);
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnLeaf() {
  uint64_t x = 1;
  for (long i = 0; i < 1000 * g_scale; ++i) x = libdump::attribution::LeafArith(1000000, x);
  NO_TAIL_CALL;
  return x;
}

using Burner = uint64_t (*)();

__attribute__((noipa)) void ThreadOne(Burner b, double* cpu) {
  const double t0 = ThreadCpu();
  b();
  *cpu = ThreadCpu() - t0;
  NO_TAIL_CALL;
}
__attribute__((noipa)) void ThreadTwo(Burner b, double* cpu) {
  const double t0 = ThreadCpu();
  b();
  *cpu = ThreadCpu() - t0;
  NO_TAIL_CALL;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "libc";
  if (argc > 2) g_scale = std::atol(argv[2]);
  Burner one, two;
  if (mode == "clock") {
    one = BurnClockOne, two = BurnClockTwo;
  } else if (mode == "libc") {
    one = BurnCopy, two = BurnStrlen;
  } else if (mode == "leaf") {
    one = BurnAsm, two = BurnLeaf;
  } else {
    std::fprintf(stderr, "usage: %s clock|libc|leaf [SCALE]\n", argv[0]);
    return 2;
  }
  double c1 = 0, c2 = 0;
  std::thread a(ThreadOne, one, &c1);
  std::thread b(ThreadTwo, two, &c2);
  a.join();
  b.join();
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  const double cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                     static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  std::printf("%.3f process CPU s, threads %.3f %.3f\n", cpu, c1, c2);
  return 0;
}
