#include "unwind_watch.h"

#include <pthread.h>
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
  pthread_t thread;
  if (pthread_create(&thread, &attr, Watch, nullptr) != 0) g_watching.store(false, std::memory_order_relaxed);
  pthread_attr_destroy(&attr);
}

}  // namespace libdump::samplers
