// LD_PRELOAD entry points: LIBDUMP_CPUPROFILE=path profiles CPU from load to
// exit, LIBDUMP_HEAPPROFILE=path writes the heap profile at exit,
// LIBDUMP_MEMPROFILE_RATE=bytes sets the heap sampling rate.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "libdump/profiler.h"

namespace {

int g_cpu_fd = -1;
const char* g_heap_path = nullptr;

int OpenOut(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::fprintf(stderr, "libdump: cannot open %s\n", path);
  return fd;
}

void AtExit() {
  if (g_cpu_fd >= 0) {
    libdump::StopCPUProfile();
    close(g_cpu_fd);
  }
  if (g_heap_path != nullptr) {
    const int fd = OpenOut(g_heap_path);
    if (fd >= 0) {
      libdump::WriteHeapProfile(fd);
      close(fd);
    }
  }
}

// A forked child writes neither profile: both paths are the parent's, and a
// child that exits normally would truncate or interleave the parent's file.
void ForkChild() {
  g_cpu_fd = -1;  // the descriptor is closed on exec (O_CLOEXEC)
  g_heap_path = nullptr;
}

__attribute__((constructor)) void Init() {
  pthread_atfork(nullptr, nullptr, ForkChild);
  if (const char* r = getenv("LIBDUMP_MEMPROFILE_RATE")) libdump::SetMemProfileRate(std::strtoll(r, nullptr, 10));
  if (const char* hz = getenv("LIBDUMP_CPUPROFILE_RATE")) libdump::SetCPUProfileRate(std::atoi(hz));
  g_heap_path = getenv("LIBDUMP_HEAPPROFILE");
  if (g_heap_path != nullptr && !libdump::InstallHeapProfiler()) {
    std::fprintf(stderr, "libdump: LIBDUMP_HEAPPROFILE needs libdump's allocator (LD_PRELOAD libdump.so too)\n");
    g_heap_path = nullptr;
  }
  if (const char* cpu = getenv("LIBDUMP_CPUPROFILE")) {
    g_cpu_fd = OpenOut(cpu);
    if (g_cpu_fd >= 0 && !libdump::StartCPUProfile(g_cpu_fd)) {
      close(g_cpu_fd);
      g_cpu_fd = -1;
    }
  }
  if (g_cpu_fd >= 0 || g_heap_path != nullptr) atexit(AtExit);
}

}  // namespace
