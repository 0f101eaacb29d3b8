// Two threads whose CPU goes into libc's frameless routines, each called
// from its own function: BurnCopy into memcpy, BurnStrlen into strlen (1 MiB
// buffers), each for 1 s of its thread's CPU, profiled at 100 Hz into
// DIR/cpu.pprof. go tool pprof must give each function ~half the samples,
// cumulative (attribution_check.sh). Without the unwind rules, every sample
// read `[libc.so.6] -> the thread's function` and both got 0 %.
//   pprof_attribution_program DIR
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "libdump/profiler.h"

namespace {

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

constexpr size_t kBuffer = 1 << 20;
constexpr int64_t kBurnNs = 1000000000;

__attribute__((noipa)) uint64_t BurnCopy() {
  std::vector<char> a(kBuffer, 'a'), b(kBuffer);
  const int64_t end = ThreadCpuNs() + kBurnNs;
  uint64_t x = 0;
  while (ThreadCpuNs() < end) {
    std::memcpy(b.data(), a.data(), kBuffer);
    asm volatile("" ::"r"(b.data()) : "memory");
    x += static_cast<uint64_t>(b[x % kBuffer]);
  }
  asm volatile("" ::: "memory");
  return x;
}

__attribute__((noipa)) uint64_t BurnStrlen() {
  std::string s(kBuffer, 's');
  const int64_t end = ThreadCpuNs() + kBurnNs;
  uint64_t x = 0;
  while (ThreadCpuNs() < end) {
    asm volatile("" ::"r"(s.data()) : "memory");
    x += std::strlen(s.c_str());
  }
  asm volatile("" ::: "memory");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string path = std::string(argv[1]) + "/cpu.pprof";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 1;
  libdump::SetCPUProfileRate(100);
  if (!libdump::StartCPUProfile(fd)) return 1;
  std::thread a([] { BurnCopy(); });
  std::thread b([] { BurnStrlen(); });
  a.join();
  b.join();
  if (!libdump::StopCPUProfile()) return 1;
  return close(fd) == 0 ? 0 : 1;
}
