// Writes one CPU and two heap profiles of known content for the go tool
// pprof interop test: ProfWriterBurn burns the CPU, ProfWriterAlloc makes
// 1000 allocations of which 600 stay live, and writes the source line of
// its allocating call to OUTDIR/alloc_line. Then a block and a mutex
// profile (every event recorded): ProfWriterBlocked waits once for a mutex
// that ProfWriterHold holds 50 ms.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libdump/heap.h"
#include "libdump/profiler.h"

namespace {

__attribute__((noipa)) uint64_t ProfWriterBurn(int64_t ns) {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const int64_t end = ts.tv_sec * 1000000000LL + ts.tv_nsec + ns;
  volatile uint64_t x = 1;
  for (;;) {
    for (int i = 0; i < 20000; ++i) x = x * 2862933555777941757ULL + 3037000493ULL;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if (ts.tv_sec * 1000000000LL + ts.tv_nsec >= end) return x;
  }
}

// The line of the allocating call, which the profile must carry.
constexpr int kProfWriterAllocLine = __LINE__ + 3;

__attribute__((noipa)) void* ProfWriterAlloc(size_t n) {
  void* p = libdump::Allocate(n);
  asm volatile("" ::: "memory");
  return p;
}

std::mutex g_mu;
std::atomic<bool> g_held{false};

__attribute__((noipa)) void ProfWriterHold() {
  g_mu.lock();
  g_held = true;
  const timespec ts{0, 50000000};
  nanosleep(&ts, nullptr);
  g_mu.unlock();
  asm volatile("" ::: "memory");
}

__attribute__((noipa)) void ProfWriterBlocked() {
  while (!g_held) std::this_thread::yield();
  g_mu.lock();
  g_mu.unlock();
  asm volatile("" ::: "memory");
}

int Open(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::perror(path.c_str());
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int cpu = Open(dir + "/cpu.pprof");
  if (cpu < 0 || !libdump::StartCPUProfile(cpu)) return 1;
  ProfWriterBurn(300000000);
  if (!libdump::StopCPUProfile()) return 1;
  close(cpu);

  libdump::SetMemProfileRate(1);
  if (!libdump::InstallHeapProfiler()) return 1;
  std::vector<void*> v;
  for (int i = 0; i < 1000; ++i) v.push_back(ProfWriterAlloc(4000));
  for (int i = 0; i < 400; ++i) libdump::Free(v[i]);
  if (FILE* f = std::fopen((dir + "/alloc_line").c_str(), "w")) {
    std::fprintf(f, "%d\n", kProfWriterAllocLine);
    std::fclose(f);
  }
  for (auto [name, kind] : {std::pair{"/heap.pprof", libdump::HeapProfileKind::kHeap},
                            std::pair{"/allocs.pprof", libdump::HeapProfileKind::kAllocs}}) {
    const int fd = Open(dir + name);
    if (fd < 0 || !libdump::WriteHeapProfile(fd, kind)) return 1;
    close(fd);
  }

  libdump::SetBlockProfileRate(1);
  libdump::SetMutexProfileFraction(1);
  std::thread holder(ProfWriterHold), blocked(ProfWriterBlocked);
  holder.join();
  blocked.join();
  libdump::SetBlockProfileRate(0);
  libdump::SetMutexProfileFraction(0);
  for (auto [name, write] : {std::pair{"/block.pprof", &libdump::WriteBlockProfile},
                             std::pair{"/mutex.pprof", &libdump::WriteMutexProfile}}) {
    const int fd = Open(dir + name);
    if (fd < 0 || !write(fd)) return 1;
    close(fd);
  }
  return 0;
}
