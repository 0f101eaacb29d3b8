#include "unwind_watch.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>

#include "own_allocations.h"
#include "unwind_table.h"

namespace libdump::samplers {
namespace {

// As the CPU profiler's worker: a module loaded less than this long ago may
// still take the frame-pointer walk. One check is a dl_iterate_phdr
// callback that returns at the first module.
constexpr long kIntervalNs = 100 * 1000 * 1000;

std::atomic<bool> g_watching{false};

void* Watch(void*) {
  OwnAllocationScope own;  // the tables' rows are the profiler's, not the program's
  pthread_setname_np(pthread_self(), "libdump-unwind");
  for (;;) {
    timespec left{0, kIntervalNs};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    if (UnwindTables::Stale()) UnwindTables::Refresh();
    UnwindTables::Reclaim();
  }
  return nullptr;
}

// The thread stays in the parent.
void ForkChild() { g_watching.store(false, std::memory_order_relaxed); }

}  // namespace

void WatchModulesForUnwindTables() {
  OwnAllocationScope own;  // the fork handler's entry, the thread's stack and descriptor
  static const int fork_handler = pthread_atfork(nullptr, nullptr, ForkChild);
  (void)fork_handler;
  if (g_watching.exchange(true, std::memory_order_acq_rel)) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // Process-directed signals (SIGINT, SIGTERM, SIGPROF from a process
  // timer, ...) must not land on a thread the program did not create, as
  // libdump-release's policy says; faults and real-time signals (a heap
  // dump's stop) stay deliverable. The new thread inherits the mask.
  sigset_t block, old;
  sigemptyset(&block);
  for (int s = 1; s < SIGRTMIN; ++s) {
    if (s != SIGSEGV && s != SIGBUS && s != SIGFPE && s != SIGILL && s != SIGTRAP && s != SIGABRT && s != SIGSYS) {
      sigaddset(&block, s);
    }
  }
  pthread_sigmask(SIG_BLOCK, &block, &old);
  pthread_t thread;
  if (pthread_create(&thread, &attr, Watch, nullptr) != 0) g_watching.store(false, std::memory_order_relaxed);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
}

}  // namespace libdump::samplers
