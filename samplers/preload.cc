// LD_PRELOAD entry points: LIBDUMP_CPUPROFILE=path profiles CPU from load to
// exit, LIBDUMP_HEAPPROFILE=path writes the heap profile at exit,
// LIBDUMP_MEMPROFILE_RATE=bytes sets the heap sampling rate;
// LIBDUMP_BLOCKPROFILE=path and LIBDUMP_MUTEXPROFILE=path write the block and
// mutex profiles at exit, at LIBDUMP_BLOCKPROFILE_RATE=ns and
// LIBDUMP_MUTEXPROFILE_FRACTION=n (1 when the path is set without them);
// LIBDUMP_THREADCREATEPROFILE=path the threadcreate profile (the threads
// live at exit, by the stack that created them).
// With any profile on, SIGTERM and SIGINT (left at their default by the
// program) write the profiles before they end the process, and
// LIBDUMP_PROFILE_SIGNAL=sig writes the snapshot profiles (heap, block,
// mutex, threadcreate) to PATH.1, PATH.2, ... each time it arrives.
//
// This file is in both preloads: libdump.so (the allocator, heap dumps and
// every profile: the one line users need) and libdumpprof.so (the profilers
// alone, for a program that keeps its own malloc). What the preloaded library
// cannot do is said on stderr at start, never silently skipped: a heap
// profile or a heap dump without libdump's allocator. When both are
// preloaded, the first constructor to run claims the environment and the
// other does nothing, so nothing is profiled twice.
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
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <signal.h>

#include "samplers/http/debug_server.h"
#include "platform/env/env_var.h"
#include "platform/proc/helper_threads.h"
#include "samplers/flight_recorder/flight_recorder.h"
#include "libdump/heap_dump.h"
#include "libdump/profiler.h"
#include "platform/output/output_file.h"
#include "samplers/common/own_allocations.h"

// Present when libdump's heap dumper is in the process (libdump.so), absent
// in libdumpprof.so alone.
namespace libdump {
int WriteHeapDump(int fd, const HeapDumpOptions& options) __attribute__((weak));
namespace internal {
// Default visibility and no anonymous namespace: with both preloads loaded,
// both constructors call the first library's copy, and only one wins.
bool ClaimPreloadEnvironment();
bool ClaimPreloadEnvironment() {
  static std::atomic<bool> claimed{false};
  return !claimed.exchange(true);
}
}  // namespace internal
}  // namespace libdump

namespace {

namespace env = libdump::env;
using libdump::output::PartialFile;

constexpr const char* kRootVar = "LIBDUMP_PROFILE_ROOT";

// Heap-allocated and never destroyed: static destructors would run among the
// atexit handlers. A forked child drops them.
std::string* g_cpu_path = nullptr;
std::string* g_heap_path = nullptr;
std::string* g_block_path = nullptr;
std::string* g_mutex_path = nullptr;
std::string* g_threadcreate_path = nullptr;
// Once: at exit, or from the writer thread on SIGTERM/SIGINT.
std::atomic<bool> g_written{false};

// libc's setenv, not the program's: bash defines its own setenv, and one
// called before bash has read its environment makes bash's getenv (which
// every other constructor calls) find nothing, and bash lose PATH. libc's
// changes environ, which bash's main receives after the constructors.
int LibcSetenv(const char* name, const char* value) {
  using SetenvFn = int (*)(const char*, const char*, int);
  static const SetenvFn libc = [] {
    void* f = dlsym(RTLD_NEXT, "setenv");
    return f != nullptr ? reinterpret_cast<SetenvFn>(f) : &setenv;
  }();
  return libc(name, value, 0);
}

bool IsFirstProcess() {
  const std::string self = std::to_string(getpid());
  const char* root = getenv(kRootVar);
  if (root == nullptr) {
    LibcSetenv(kRootVar, self.c_str());
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
  const PartialFile probe(path, 0600);
  if (probe.fd() < 0) Report(what, probe.partial_path(), probe.error());
  return probe.fd() >= 0;
}

template <typename WriteFn>
void WriteAtExit(const char* what, const std::string& path, WriteFn write) {
  PartialFile f(path, 0600);
  if (f.fd() < 0) return Report(what, f.partial_path(), f.error());
  errno = 0;
  const bool written = write(f.fd());
  const int err = written ? f.Commit() : (errno != 0 ? errno : EIO);
  if (err != 0) Report(what, path, err);
}

// The profiles that are snapshots (all but the CPU one), to path + suffix.
void WriteSnapshots(const std::string& suffix) {
  if (g_heap_path != nullptr) {
    WriteAtExit("heap profile", *g_heap_path + suffix, [](int fd) { return libdump::WriteHeapProfile(fd); });
  }
  if (g_block_path != nullptr) {
    WriteAtExit("block profile", *g_block_path + suffix, [](int fd) { return libdump::WriteBlockProfile(fd); });
  }
  if (g_mutex_path != nullptr) {
    WriteAtExit("mutex profile", *g_mutex_path + suffix, [](int fd) { return libdump::WriteMutexProfile(fd); });
  }
  if (g_threadcreate_path != nullptr) {
    WriteAtExit("threadcreate profile", *g_threadcreate_path + suffix,
                [](int fd) { return libdump::WriteThreadCreateProfile(fd); });
  }
}

void AtExit() {
  if (g_written.exchange(true)) return;
  const libdump::samplers::OwnAllocationScope own;  // not the program's
  if (g_cpu_path != nullptr) WriteAtExit("CPU profile", *g_cpu_path, [](int fd) { return libdump::StopCPUProfile(fd); });
  WriteSnapshots("");
}

void ForkChild() {
  g_cpu_path = nullptr;
  g_heap_path = nullptr;
  g_block_path = nullptr;
  g_mutex_path = nullptr;
  g_threadcreate_path = nullptr;
}

// The number of a signal as the environment parser reads it (USR2, SIGUSR2,
// RTMIN+N or a number); 0 if none.
int SignalNumber(const char* s) {
  const char* why = nullptr;
  return libdump::env::ParseSignal(s, &why);
}

// Signals. A handler can write no profile (symbolizing allocates and opens
// files), so it writes the signal's number to a pipe, and a thread started
// at load time does the work: on LIBDUMP_PROFILE_SIGNAL it writes the
// snapshot profiles to PATH.1, PATH.2, ... (gperftools' HEAPPROFILESIGNAL);
// on SIGTERM or SIGINT, which the program left at their default, it writes
// every profile as at exit and then lets the signal end the process as it
// would have.
int g_signal_pipe[2] = {-1, -1};
int g_snapshot_signal = 0;

void OnProfileSignal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  (void)!write(g_signal_pipe[1], &byte, 1);  // full: one is pending already
  errno = saved;
}

// Around the program's credential changes (helper_threads.h) the writer
// ends (a 0 byte in the pipe) and starts again.
pthread_t g_writer;
bool g_writer_runs = false;
unsigned g_snapshots = 0;
std::atomic<bool> g_writer_quit{false};

void* SignalWriter(void*) {
  pthread_setname_np(pthread_self(), "libdump-profiles");
  for (;;) {
    unsigned char sig;
    const ssize_t n = read(g_signal_pipe[0], &sig, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || sig == 0 || g_writer_quit) return nullptr;
    if (sig == g_snapshot_signal) {
      WriteSnapshots("." + std::to_string(++g_snapshots));
      continue;
    }
    AtExit();
    signal(sig, SIG_DFL);
    kill(getpid(), sig);  // this thread blocks it; another takes it and dies
  }
}

bool StartSignalWriter() {
  // The thread takes none of the program's signals, but a heap dump's stop
  // (a real-time signal) reaches it: one that never answered would hold every
  // dump for the stop's whole timeout.
  sigset_t old;
  libdump::proc::BlockProgramSignals(&old);
  const int rc = pthread_create(&g_writer, nullptr, SignalWriter, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  g_writer_runs = rc == 0;
  return g_writer_runs;
}

bool StopSignalWriter() {
  if (!g_writer_runs) return false;
  const unsigned char quit = 0;
  // A full pipe: the writer is busy with signals and sees g_writer_quit next.
  g_writer_quit = true;
  (void)!write(g_signal_pipe[1], &quit, 1);
  pthread_join(g_writer, nullptr);
  g_writer_runs = false;
  g_writer_quit = false;
  return true;
}

void RestartSignalWriter() { StartSignalWriter(); }

const libdump::proc::HelperThread kWriterHelper{StopSignalWriter, RestartSignalWriter};

void InstallSignals() {
  // SIGTERM and SIGINT already write every profile before the process ends.
  g_snapshot_signal = libdump::env::GetSignal("LIBDUMP_PROFILE_SIGNAL", 0);
  if (g_snapshot_signal == SIGTERM || g_snapshot_signal == SIGINT || g_snapshot_signal >= 256) {
    libdump::env::Warn("LIBDUMP_PROFILE_SIGNAL", libdump::env::Get("LIBDUMP_PROFILE_SIGNAL"),
                       "already writes every profile as the process ends", "none");
    g_snapshot_signal = 0;
  }
  if (pipe2(g_signal_pipe, O_CLOEXEC) != 0) return;
  fcntl(g_signal_pipe[1], F_SETFL, O_NONBLOCK);
  if (!StartSignalWriter()) return;
  libdump::proc::RegisterHelperThread(&kWriterHelper);
  pthread_atfork(nullptr, nullptr, [] { g_writer_runs = false; });  // the thread is the parent's
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnProfileSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT}) {
    struct sigaction cur;
    // A program's own handler (or an inherited SIG_IGN) stays.
    if (sigaction(sig, nullptr, &cur) == 0 && cur.sa_handler == SIG_DFL) sigaction(sig, &sa, nullptr);
  }
  if (g_snapshot_signal != 0) sigaction(g_snapshot_signal, &sa, nullptr);
}


// What a library without libdump's allocator cannot do, said once at start.
void ReportWithoutAllocator() {
  if (libdump::WriteHeapDump != nullptr) return;
  constexpr const char* kUse = "LD_PRELOAD=libdump.so gives heap dumps and every profile";
  if (const char* sig = getenv("LIBDUMP_HEAPDUMP_SIGNAL")) {
    // The user asked for the signal to dump, not to kill: ignoring it keeps
    // the process alive, as it would be with the dumper present.
    const int n = SignalNumber(sig);
    if (n != 0 && n != SIGKILL && n != SIGSTOP) signal(n, SIG_IGN);
    std::fprintf(stderr,
                 "libdump: LIBDUMP_HEAPDUMP_SIGNAL=%s needs libdump's heap dumper, which libdumpprof.so does not "
                 "have (%s); the signal is %s\n",
                 sig, kUse, n != 0 ? "ignored" : "not a signal");
  }
  if (const char* oom = getenv("LIBDUMP_HEAPDUMP_ON_OOM")) {
    std::fprintf(stderr, "libdump: LIBDUMP_HEAPDUMP_ON_OOM=%s needs libdump's heap dumper, which libdumpprof.so does "
                 "not have (%s)\n", oom, kUse);
  }
  if (const char* rate = getenv("LIBDUMP_MEMPROFILE_RATE")) {
    if (libdump::env::Get("LIBDUMP_HEAPPROFILE") == nullptr) {
      std::fprintf(stderr, "libdump: LIBDUMP_MEMPROFILE_RATE=%s has no effect without libdump's allocator (%s)\n",
                   rate, kUse);
    }
  }
}

__attribute__((constructor)) void Init() {
  if (!libdump::internal::ClaimPreloadEnvironment()) return;
  const libdump::samplers::OwnAllocationScope own;  // not the program's
  pthread_atfork(nullptr, nullptr, ForkChild);
  ReportWithoutAllocator();
  // The environment parser's spellings (512k, 1M) and its one-line refusals.
  if (env::Get("LIBDUMP_MEMPROFILE_RATE") != nullptr) {
    libdump::SetMemProfileRate(static_cast<int64_t>(
        env::GetSize("LIBDUMP_MEMPROFILE_RATE", static_cast<uint64_t>(libdump::MemProfileRate()), 0, INT64_MAX)));
  }
  if (env::Get("LIBDUMP_CPUPROFILE_RATE") != nullptr) {
    libdump::SetCPUProfileRate(static_cast<int>(env::GetUint("LIBDUMP_CPUPROFILE_RATE", 100, 1, 1000000)));
  }
  libdump::samplers::flight::StartFromEnvironment();  // LIBDUMP_FLIGHT_RECORDER*
  const char* heap = libdump::env::Get("LIBDUMP_HEAPPROFILE");
  const char* cpu = env::Get("LIBDUMP_CPUPROFILE");
  const char* block = env::Get("LIBDUMP_BLOCKPROFILE");
  const char* mutex = env::Get("LIBDUMP_MUTEXPROFILE");
  const char* threadcreate = env::Get("LIBDUMP_THREADCREATEPROFILE");
  if (threadcreate != nullptr) libdump::EnableThreadCreateProfile();  // before the program's threads
  // As `go test -blockprofile` and `-mutexprofile` do: a profile asked for
  // without its rate records every event.
  const uint64_t block_default = block != nullptr ? 1 : 0;
  if (env::Get("LIBDUMP_BLOCKPROFILE_RATE") != nullptr || block != nullptr) {
    libdump::SetBlockProfileRate(
        static_cast<int64_t>(env::GetUint("LIBDUMP_BLOCKPROFILE_RATE", block_default, 0, INT64_MAX)));
  }
  const uint64_t mutex_default = mutex != nullptr ? 1 : 0;
  if (env::Get("LIBDUMP_MUTEXPROFILE_FRACTION") != nullptr || mutex != nullptr) {
    libdump::SetMutexProfileFraction(
        static_cast<int>(env::GetUint("LIBDUMP_MUTEXPROFILE_FRACTION", mutex_default, 0, INT32_MAX)));
  }
  // Only the first process serves: its children inherit the variable, and
  // would each either fail to bind its port or serve another one.
  const char* addr = env::Get("LIBDUMP_PPROF_ADDR");
  if (addr != nullptr && IsFirstProcess()) {
    std::string error, bound;
    if (libdump::StartDebugServer(addr, &error, &bound)) {
      std::fprintf(stderr, "libdump: serving http://%s/debug/pprof/\n", bound.c_str());
      libdump::samplers::ParsedAddress a;
      if (libdump::samplers::ParseListenAddress(addr, &a, &error) && !libdump::samplers::IsLoopbackAddress(a.host)) {
        std::fprintf(stderr,
                     "libdump: warning: LIBDUMP_PPROF_ADDR=%s: other machines can reach /debug/pprof/ and read every "
                     "byte of this heap; use 127.0.0.1:PORT to keep it local\n",
                     addr);
      }
    } else {
      std::fprintf(stderr, "libdump: LIBDUMP_PPROF_ADDR=%s: %s; not serving /debug/pprof/\n", addr, error.c_str());
    }
  }
  if (heap == nullptr && cpu == nullptr && block == nullptr && mutex == nullptr && threadcreate == nullptr) return;
  const bool first = IsFirstProcess();
  if (heap != nullptr) {
    const std::string path = ProfilePath(heap, first);
    if (!libdump::InstallHeapProfiler()) {
      std::fprintf(stderr,
                   "libdump: LIBDUMP_HEAPPROFILE needs libdump's allocator, which libdumpprof.so does not have "
                   "(LD_PRELOAD=libdump.so gives heap dumps and every profile); no heap profile is written\n");
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
  if (block != nullptr) {
    const std::string path = ProfilePath(block, first);
    if (Creatable("block profile", path)) g_block_path = new std::string(path);
  }
  if (mutex != nullptr) {
    const std::string path = ProfilePath(mutex, first);
    if (Creatable("mutex profile", path)) g_mutex_path = new std::string(path);
  }
  if (threadcreate != nullptr) {
    const std::string path = ProfilePath(threadcreate, first);
    if (Creatable("threadcreate profile", path)) g_threadcreate_path = new std::string(path);
  }
  if (g_cpu_path != nullptr || g_heap_path != nullptr || g_block_path != nullptr || g_mutex_path != nullptr ||
      g_threadcreate_path != nullptr) {
    atexit(AtExit);
    InstallSignals();
  }
}

}  // namespace
