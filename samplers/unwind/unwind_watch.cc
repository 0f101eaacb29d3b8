#include "samplers/unwind/unwind_watch.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "platform/proc/helper_threads.h"
#include "samplers/common/own_allocations.h"
#include "samplers/unwind/unwind_table.h"

namespace libdump::samplers {
namespace {

// As the CPU profiler's worker: a module loaded less than this long ago may
// still take the frame-pointer walk. One check is a dl_iterate_phdr
// callback that returns at the first module.
constexpr long kIntervalNs = 100 * 1000 * 1000;

std::atomic<bool> g_watching{false};
pthread_t g_thread;
bool g_thread_runs = false;  // joinable g_thread: StopWatch ends it around credential changes
std::atomic<int> g_quit{0};  // a futex word: nonzero ends the thread at once

void* Watch(void*) {
  OwnAllocationScope own;  // the tables' rows are the profiler's, not the program's
  pthread_setname_np(pthread_self(), "libdump-unwind");
  for (;;) {
    const timespec interval{0, kIntervalNs};
    syscall(SYS_futex, &g_quit, FUTEX_WAIT_PRIVATE, 0, &interval, nullptr, 0);
    if (g_quit.load(std::memory_order_acquire) != 0) return nullptr;
    if (UnwindTables::Stale()) UnwindTables::Refresh();
    UnwindTables::Reclaim();
  }
  return nullptr;
}

// The thread stays in the parent.
void ForkChild() {
  g_watching.store(false, std::memory_order_relaxed);
  g_thread_runs = false;
}

void StartWatch();

bool StopWatch() {
  if (!g_thread_runs) return false;
  g_quit.store(1, std::memory_order_release);
  syscall(SYS_futex, &g_quit, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  pthread_join(g_thread, nullptr);
  g_quit.store(0, std::memory_order_release);
  g_thread_runs = false;
  return true;
}

const proc::HelperThread kWatchHelper{StopWatch, StartWatch};

}  // namespace

void WatchModulesForUnwindTables() {
  OwnAllocationScope own;  // the fork handler's entry, the thread's stack and descriptor
  static const int fork_handler = pthread_atfork(nullptr, nullptr, ForkChild);
  (void)fork_handler;
  if (g_watching.exchange(true, std::memory_order_acq_rel)) return;
  proc::RegisterHelperThread(&kWatchHelper);
  StartWatch();
}

namespace {

void StartWatch() {
  OwnAllocationScope own;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // The new thread inherits the mask: none of the program's signals
  // (SIGPROF from a process timer among them), faults and a heap dump's stop
  // still (helper_threads.h).
  sigset_t old;
  libdump::proc::BlockProgramSignals(&old);
  if (pthread_create(&g_thread, &attr, Watch, nullptr) == 0) {
    g_thread_runs = true;
  } else {
    g_watching.store(false, std::memory_order_relaxed);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
}

}  // namespace

}  // namespace libdump::samplers
