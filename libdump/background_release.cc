#include "background_release.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "env_var.h"
#include "lock.h"
#include "page_heap.h"
#include "thread_cache.h"

namespace libdump::internal {

namespace {

std::atomic<bool> g_wanted{false};
// The thread exists (or is being made). Cleared by the thread as it leaves
// and by a forked child, which has no such thread.
std::atomic<bool> g_running{false};

void Tick() {
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  g_page_heap.Tick();
}

void* Loop(void*) {
  pthread_setname_np(pthread_self(), "libdump-release");
  const timespec epoch{0, static_cast<long>(PageHeap::kDecayEpochNs)};
  while (g_wanted.load(std::memory_order_acquire)) {
    nanosleep(&epoch, nullptr);
    Tick();
  }
  g_running.store(false, std::memory_order_release);
  // Asked to run again between the last check and the store above.
  if (g_wanted.load(std::memory_order_acquire)) SetBackgroundRelease(true);
  return nullptr;
}

// Process-directed signals (SIGINT, SIGTERM, SIGCHLD, SIGUSR1, ...) must not
// land on a thread the program did not create, where its handler would run
// among allocator frames or, with the program's threads blocking a signal for
// sigwait, be taken by the wrong thread. Faults stay deliverable, and so do
// real-time signals: heap dumps stop threads with one.
void BlockAsyncSignals(sigset_t* old) {
  sigset_t set;
  sigemptyset(&set);
  for (int s = 1; s < SIGRTMIN; ++s) {
    if (s != SIGSEGV && s != SIGBUS && s != SIGFPE && s != SIGILL && s != SIGTRAP && s != SIGABRT && s != SIGSYS) {
      sigaddset(&set, s);
    }
  }
  pthread_sigmask(SIG_BLOCK, &set, old);
}

void ForkChild() { g_running.store(false, std::memory_order_relaxed); }

__attribute__((constructor)) void FromEnvironment() {
  if (env::GetBool("LIBDUMP_BACKGROUND_RELEASE", false)) SetBackgroundRelease(true);
}

}  // namespace

uint64_t ReleaseFreeMemoryDownTo(uint64_t keep) {
  AllocatorSection section;
  // The caller's own cache of freed large spans: other threads' caches are
  // theirs to touch (large_cache.h), and hold at most kLargeCacheBytes each.
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
  if (!on || g_running.exchange(true, std::memory_order_acq_rel)) return true;
  static const int fork_handler = pthread_atfork(nullptr, nullptr, ForkChild);
  (void)fork_handler;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 << 10);
  sigset_t old;
  BlockAsyncSignals(&old);  // the new thread inherits the mask
  pthread_t t;
  const bool started = pthread_create(&t, &attr, Loop, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (!started) g_running.store(false, std::memory_order_release);
  return started;
}

}  // namespace libdump
