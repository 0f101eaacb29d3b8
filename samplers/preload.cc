// LD_PRELOAD entry points: LIBDUMP_CPUPROFILE=path profiles CPU from load to
// exit, LIBDUMP_HEAPPROFILE=path writes the heap profile at exit,
// LIBDUMP_MEMPROFILE_RATE=bytes sets the heap sampling rate.
//
// Paths take %p (pid) and %t (time). Each file is created at exit, as
// PATH.partial renamed to PATH when complete: it appears whole or not at all,
// and a process that never exits normally (killed, or ending with _exit as
// dash does) leaves nothing. Whether PATH can be created is checked at start.
//
// Children inherit the variables. A forked child writes neither profile: the
// CPU session (worker thread, timers) stays in the parent, and the child
// would write the parent's file. A process that execs is profiled anew, and
// so that a profiled shell script gives one profile per process instead of
// the last writer's, only the first process writes PATH: it marks the
// environment with its pid, and every process it starts writes PATH.<pid>
// (as gperftools' CPUPROFILE does), unless the path already names the pid.
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "flight_recorder.h"
#include "libdump/profiler.h"
#include "output_file.h"

namespace {

using libdump::output::PartialFile;

constexpr const char* kRootVar = "LIBDUMP_PROFILE_ROOT";

// Heap-allocated and never destroyed: static destructors would run among the
// atexit handlers. A forked child drops them.
std::string* g_cpu_path = nullptr;
std::string* g_heap_path = nullptr;

bool IsFirstProcess() {
  const std::string self = std::to_string(getpid());
  const char* root = getenv(kRootVar);
  if (root == nullptr) {
    setenv(kRootVar, self.c_str(), 0);
    return true;
  }
  return self == root;  // an exec without a fork is still the first process
}

std::string ProfilePath(const char* pattern, bool first_process) {
  bool names_pid = false;
  std::string path = libdump::output::ExpandPath(pattern, &names_pid);
  if (!first_process && !names_pid) path += "." + std::to_string(getpid());
  return path;
}

void Report(const char* what, const std::string& path, int err) {
  std::fprintf(stderr, "libdump: %s %s not written: %s\n", what, path.c_str(), std::strerror(err));
}

// Creates the file, or says at start why it will not be.
bool Creatable(const char* what, const std::string& path) {
  const PartialFile probe(path, 0644);
  if (probe.fd() < 0) Report(what, probe.partial_path(), probe.error());
  return probe.fd() >= 0;
}

template <typename WriteFn>
void WriteAtExit(const char* what, const std::string& path, WriteFn write) {
  PartialFile f(path, 0644);
  if (f.fd() < 0) return Report(what, f.partial_path(), f.error());
  errno = 0;
  const bool written = write(f.fd());
  const int err = written ? f.Commit() : (errno != 0 ? errno : EIO);
  if (err != 0) Report(what, path, err);
}

void AtExit() {
  if (g_cpu_path != nullptr) WriteAtExit("CPU profile", *g_cpu_path, [](int fd) { return libdump::StopCPUProfile(fd); });
  if (g_heap_path != nullptr) WriteAtExit("heap profile", *g_heap_path, [](int fd) { return libdump::WriteHeapProfile(fd); });
}

void ForkChild() {
  g_cpu_path = nullptr;
  g_heap_path = nullptr;
}

__attribute__((constructor)) void Init() {
  pthread_atfork(nullptr, nullptr, ForkChild);
  if (const char* r = getenv("LIBDUMP_MEMPROFILE_RATE")) libdump::SetMemProfileRate(std::strtoll(r, nullptr, 10));
  if (const char* hz = getenv("LIBDUMP_CPUPROFILE_RATE")) libdump::SetCPUProfileRate(std::atoi(hz));
  libdump::samplers::flight::StartFromEnvironment();  // LIBDUMP_FLIGHT_RECORDER*
  const char* heap = getenv("LIBDUMP_HEAPPROFILE");
  const char* cpu = getenv("LIBDUMP_CPUPROFILE");
  if (heap == nullptr && cpu == nullptr) return;
  const bool first = IsFirstProcess();
  if (heap != nullptr) {
    const std::string path = ProfilePath(heap, first);
    if (!libdump::InstallHeapProfiler()) {
      std::fprintf(stderr, "libdump: LIBDUMP_HEAPPROFILE needs libdump's allocator (LD_PRELOAD libdump.so too)\n");
    } else if (Creatable("heap profile", path)) {
      g_heap_path = new std::string(path);
    }
  }
  if (cpu != nullptr) {
    const std::string path = ProfilePath(cpu, first);
    if (Creatable("CPU profile", path)) {
      if (libdump::StartCPUProfile(-1)) g_cpu_path = new std::string(path);
      else Report("CPU profile", path, errno);
    }
  }
  if (g_cpu_path != nullptr || g_heap_path != nullptr) atexit(AtExit);
}

}  // namespace
