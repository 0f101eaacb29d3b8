// Heap dumps of unmodified programs: with LD_PRELOAD=libdump.so and
// LIBDUMP_HEAPDUMP_SIGNAL=USR2 (a name or a number), `kill -USR2 PID` writes a
// dump to LIBDUMP_HEAPDUMP_PATH (default heap.%p.%t.%n.dump; %p is the pid, %t
// the time in seconds, %n the dump's sequence number), created with mode 0600.
//
// A signal handler cannot dump (the dump prepares with malloc), so the handler
// only writes a byte to a pipe; a thread started at load time waits on it and
// does the work. LIBDUMP_HEAPDUMP_ZSTD=1 compresses, by default in a fork
// snapshot (LIBDUMP_HEAPDUMP_MODE).
//
// Requests that arrive while a dump is being written are coalesced into one
// dump, started when the current one ends and reported with their count: a
// dump shows the heap as it is when it starts, so a second one queued behind
// it would show the same later state. No request is lost without a dump
// that starts after it, and no dump replaces another's file.
//
// A forked child gets its own pipe and dumper (ForkChild,
// RestartDumperAfterFork): a signal sent to the child dumps the child.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dump_on_signal.h"
#include "dump_to_path.h"
#include "own_memory.h"
#include "platform/env/env_var.h"
#include "platform/proc/helper_threads.h"
#include "platform/capture/stop_the_world.h"
#include "libdump/heap_dump.h"

namespace libdump {
namespace {

int g_pipe[2] = {-1, -1};
int g_signal = 0;
bool g_child_needs_dumper = false;  // set by ForkChild, cleared by RestartDumperAfterFork
// The dumper steps aside around the program's credential changes
// (helper_threads.h): a 0 byte in the pipe and g_stop end it; requests it
// read but did not serve wait in g_deferred for the next dumper.
pthread_t g_thread;
bool g_thread_running = false;
std::atomic<bool> g_stop{false};
std::atomic<long> g_deferred{0};

// Read at load time, so that a wrong value is reported at start.
const char* g_pattern = nullptr;
HeapDumpOptions g_options;

void OnSignal(int) {
  const int saved = errno;
  const char byte = 1;  // a request (0 ends the thread)
  // A full pipe means a dump is already pending: dropping this one is right.
  (void)!write(g_pipe[1], &byte, 1);
  errno = saved;
}

void* DumperThread(void* arg) {
  // Whatever this thread allocates, for all its life, is libdump's own.
  const internal::OwnScope own(internal::OwnComponent::kDumpWriter);
  pthread_setname_np(pthread_self(), "libdump-dumper");
  // Created with every signal blocked; now take all but the trigger, so that
  // a dump started elsewhere can stop this thread like any other.
  sigset_t trigger;
  sigemptyset(&trigger);
  sigaddset(&trigger, static_cast<int>(reinterpret_cast<intptr_t>(arg)));
  pthread_sigmask(SIG_SETMASK, &trigger, nullptr);
  const int sig = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  const char* abbrev = sigabbrev_np(sig);  // null for real-time signals
  const std::string why = "on signal " + (abbrev ? std::string("SIG") + abbrev : std::to_string(sig));
  for (;;) {
    char bytes[256];
    ssize_t n = read(g_pipe[0], bytes, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;
    // Every request that came during the last dump is served by this one.
    long requests = bytes[0] != 0 ? 1 : 0;
    int queued = 0;
    while (ioctl(g_pipe[0], FIONREAD, &queued) == 0 && queued > 0) {
      n = read(g_pipe[0], bytes, std::min<size_t>(sizeof bytes, static_cast<size_t>(queued)));
      if (n <= 0) break;
      requests += n - std::count(bytes, bytes + n, 0);
    }
    requests += g_deferred.exchange(0);
    if (g_stop.load()) {
      g_deferred += requests;
      return nullptr;
    }
    if (requests == 0) continue;
    if (requests == 1) {
      heapdump::DumpToPath(g_pattern, g_options, why.c_str());
    } else {
      const std::string coalesced = why + " (" + std::to_string(requests) + " requests coalesced)";
      heapdump::DumpToPath(g_pattern, g_options, coalesced.c_str());
    }
  }
}

bool StartDumper(int sig) {
  pthread_t t;
  // The thread must not take the signal itself or inherit a blocked mask.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&t, nullptr, DumperThread, reinterpret_cast<void*>(static_cast<intptr_t>(sig)));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) return false;
  g_thread = t;
  g_thread_running = true;
  return true;
}

bool StopDumper() {
  if (!g_thread_running) return false;
  g_stop = true;
  const char quit = 0;
  // A full pipe: the thread is busy with requests and sees g_stop next.
  (void)!write(g_pipe[1], &quit, 1);
  pthread_join(g_thread, nullptr);
  g_thread_running = false;
  g_stop = false;
  return true;
}

void RestartDumper() {
  if (!StartDumper(g_signal)) return;
  if (g_deferred.load() > 0) {
    const char byte = 1;
    (void)!write(g_pipe[1], &byte, 1);
  }
}

const proc::HelperThread kDumperHelper{StopDumper, RestartDumper};

// A forked child has no dumper thread, and its pipe is the parent's: a
// signal sent to the child would make the parent dump. The child gets a
// pipe of its own at the same descriptor numbers (so the handler never writes
// to a closed one) and, once fork() returns (RestartDumperAfterFork), a
// dumper. The forking thread blocks the signal from before the fork until
// the pipe is the child's, so one sent to the new pid at once waits for it.
// Async-signal-safe: sigprocmask, pipe2, dup3, fcntl and close only.
thread_local sigset_t t_mask_before_fork;

void ForkPrepare() {
  sigset_t trigger;
  sigemptyset(&trigger);
  sigaddset(&trigger, g_signal);
  pthread_sigmask(SIG_BLOCK, &trigger, &t_mask_before_fork);
}

void ForkParent() { pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr); }

void SwapPipe() {
  int fresh[2];
  if (pipe2(fresh, O_CLOEXEC | O_NONBLOCK) != 0) {
    // No pipe, no dumps in this child: signals are dropped, never the parent's.
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup3(null, g_pipe[1], O_CLOEXEC);
      close(null);
    }
    return;
  }
  dup3(fresh[0], g_pipe[0], O_CLOEXEC);
  dup3(fresh[1], g_pipe[1], O_CLOEXEC);
  close(fresh[0]);
  close(fresh[1]);
  // The reader blocks: only the writer (the handler) must not.
  fcntl(g_pipe[0], F_SETFL, 0);
  g_child_needs_dumper = true;
}

void ForkChild() {
  g_thread_running = false;  // the parent's
  SwapPipe();
  pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}

__attribute__((constructor)) void InstallDumpSignal() {
  // Refused signals say why ("SEGV is reserved for crashes") and leave heap
  // dumps on signal off.
  const int sig = env::GetSignal("LIBDUMP_HEAPDUMP_SIGNAL", 0, capture::StopSignal(),
                                 "is libdump's stop-the-world signal (LIBDUMP_STOP_SIGNAL)");
  if (sig == 0) return;
  g_pattern = env::Get("LIBDUMP_HEAPDUMP_PATH");
  g_options = HeapDumpOptionsFromEnvironment(env::GetBool("LIBDUMP_HEAPDUMP_ZSTD", false));
  if (pipe2(g_pipe, O_CLOEXEC) != 0) return;
  fcntl(g_pipe[1], F_SETFL, O_NONBLOCK);
  if (!StartDumper(sig)) return;
  g_signal = sig;
  proc::RegisterHelperThread(&kDumperHelper);
  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

}  // namespace

namespace heapdump {

void RestartDumperAfterFork() {
  if (!g_child_needs_dumper) return;
  g_child_needs_dumper = false;
  StartDumper(g_signal);
}

}  // namespace heapdump
}  // namespace libdump
