// Heap dumps of unmodified programs: with LD_PRELOAD=libdump.so and
// LIBDUMP_HEAPDUMP_SIGNAL=USR2 (a name or a number), `kill -USR2 PID` writes a
// dump to LIBDUMP_HEAPDUMP_PATH (default heap.%p.%t.dump; %p is the pid, %t
// the time in seconds), created with mode 0600.
//
// A signal handler cannot dump (the dump prepares with malloc), so the handler
// only writes a byte to a pipe; a thread started at load time waits on it and
// does the work. LIBDUMP_HEAPDUMP_ZSTD=1 compresses.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dump_to_path.h"
#include "env_var.h"
#include "stop_the_world.h"
#include "libdump/heap_dump.h"

namespace libdump {
namespace {

int g_pipe[2] = {-1, -1};
// Read at load time, so that a wrong value is reported at start.
const char* g_pattern = nullptr;
HeapDumpOptions g_options;

void OnSignal(int) {
  const int saved = errno;
  const char byte = 1;
  // A full pipe means a dump is already pending: dropping this one is right.
  (void)!write(g_pipe[1], &byte, 1);
  errno = saved;
}

void* DumperThread(void* arg) {
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
    char byte;
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;
    heapdump::DumpToPath(g_pattern, g_options, why.c_str());
  }
}

__attribute__((constructor)) void InstallDumpSignal() {
  // Refused signals say why ("SEGV is reserved for crashes") and leave heap
  // dumps on signal off.
  const int sig = env::GetSignal("LIBDUMP_HEAPDUMP_SIGNAL", 0, capture::StopSignal(),
                                 "is libdump's stop-the-world signal (LIBDUMP_STOP_SIGNAL)");
  if (sig == 0) return;
  g_pattern = env::Get("LIBDUMP_HEAPDUMP_PATH");
  g_options.zstd = env::GetBool("LIBDUMP_HEAPDUMP_ZSTD", false);
  if (pipe2(g_pipe, O_CLOEXEC) != 0) return;
  fcntl(g_pipe[1], F_SETFL, O_NONBLOCK);
  pthread_t t;
  // The thread must not take the signal itself or inherit a blocked mask.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&t, nullptr, DumperThread, reinterpret_cast<void*>(static_cast<intptr_t>(sig)));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) return;
  pthread_detach(t);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

}  // namespace
}  // namespace libdump
