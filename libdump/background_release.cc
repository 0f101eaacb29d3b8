#include "background_release.h"

#include "central_freelist.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "platform/env/env_var.h"
#include "platform/proc/helper_threads.h"
#include "central_freelist.h"
#include "lock.h"
#include "page_heap.h"
#include "thread_cache.h"

namespace libdump::internal {

namespace {

std::atomic<bool> g_wanted{false};
// The thread's life: kNone, kRunning (it exists, or is being made),
// kStopping (StopThread joins it; helper_threads.h). A forked child has none.
enum State : int { kNone, kRunning, kStopping };
std::atomic<int> g_state{kNone};
pthread_t g_thread;
// Nonzero: the thread is to end now (a futex word, so the wait ends at once).
std::atomic<int> g_quit{0};

void Tick() {
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  g_page_heap.Tick();
}

void* Loop(void*) {
  pthread_setname_np(pthread_self(), "libdump-release");
  const timespec epoch{0, static_cast<long>(PageHeap::kDecayEpochNs)};
  for (;;) {
    syscall(SYS_futex, &g_quit, FUTEX_WAIT_PRIVATE, 0, &epoch, nullptr, 0);
    if (g_quit.load(std::memory_order_acquire) != 0) return nullptr;  // StopThread joins
    if (!g_wanted.load(std::memory_order_acquire)) break;
    Tick();
  }
  int running = kRunning;
  if (!g_state.compare_exchange_strong(running, kNone)) return nullptr;  // being stopped: joined
  pthread_detach(pthread_self());
  // Asked to run again between the last check and the store above.
  if (g_wanted.load(std::memory_order_acquire)) SetBackgroundRelease(true);
  return nullptr;
}

bool StopThread() {
  int running = kRunning;
  if (!g_state.compare_exchange_strong(running, kStopping)) return false;
  g_quit.store(1, std::memory_order_release);
  syscall(SYS_futex, &g_quit, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  pthread_join(g_thread, nullptr);
  g_quit.store(0, std::memory_order_release);
  g_state.store(kNone, std::memory_order_release);
  return true;
}

void RestartThread() {
  if (g_wanted.load(std::memory_order_acquire)) SetBackgroundRelease(true);
}

const proc::HelperThread kReleaseHelper{StopThread, RestartThread};

void ForkChild() { g_state.store(kNone, std::memory_order_relaxed); }

__attribute__((constructor)) void FromEnvironment() {
  if (env::GetBool("LIBDUMP_BACKGROUND_RELEASE", false)) SetBackgroundRelease(true);
}

}  // namespace

uint64_t ReleaseFreeMemoryDownTo(uint64_t keep) {
  // The caller's own lists and cache of freed large spans (other threads'
  // are theirs to touch, and hold at most ~32 KiB a class and
  // kLargeCacheBytes each), then the transfer caches, so that the spans they
  // emptied go back to the page heap too.
  if (ThreadHeap* h = t_heap) FlushLists(h);
  DrainTransferCaches();
  AllocatorSection section;
  if (ThreadHeap* h = t_heap) DrainLargeCache(h->large_cache);
  LockGuard g(g_page_heap.mutex());
  return g_page_heap.ReleaseDownTo(keep);
}

}  // namespace libdump::internal

namespace libdump {

uint64_t ReleaseFreeMemory() { return internal::ReleaseFreeMemoryDownTo(0); }

bool SetBackgroundRelease(bool on) {
  using namespace internal;
  g_wanted.store(on, std::memory_order_release);
  int none = kNone;
  if (!on || !g_state.compare_exchange_strong(none, kRunning, std::memory_order_acq_rel)) return true;
  static const int fork_handler = pthread_atfork(nullptr, nullptr, ForkChild);
  (void)fork_handler;
  proc::RegisterHelperThread(&kReleaseHelper);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  sigset_t old;
  proc::BlockProgramSignals(&old);  // the new thread inherits the mask
  const bool started = pthread_create(&g_thread, &attr, Loop, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (!started) g_state.store(kNone, std::memory_order_release);
  return started;
}

}  // namespace libdump
