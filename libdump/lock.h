// The allocator's lock and its "inside the allocator" marker.
//
// SpinLock spins briefly and then sleeps on a futex; it never allocates, so it
// can guard the allocator itself. AllocatorSection brackets every path that
// takes a lock or changes span layout: a stop-the-world signal that arrives
// inside one is deferred until the section ends (see heap_walk.h).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "config.h"

namespace libdump::internal {

class SpinLock {
 public:
  constexpr SpinLock() = default;
  void lock() {
    int expected = 0;
    if (LIBDUMP_LIKELY(state_.compare_exchange_strong(expected, 1, std::memory_order_acquire))) return;
    LockSlow();
  }
  void unlock() {
    if (state_.exchange(0, std::memory_order_release) == 2) {
      syscall(SYS_futex, reinterpret_cast<int*>(&state_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
  }
  // After fork() only the forking thread exists; a lock its prepare handler
  // took is simply made free again.
  void ResetAfterFork() { state_.store(0, std::memory_order_relaxed); }

 private:
  void LockSlow() {
    for (int i = 0; i < 64; ++i) {
      int expected = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_weak(expected, 1, std::memory_order_acquire)) {
        return;
      }
      __builtin_ia32_pause();
    }
    // 2 = locked with possible sleepers: unlock must wake one.
    while (state_.exchange(2, std::memory_order_acquire) != 0) {
      syscall(SYS_futex, reinterpret_cast<int*>(&state_), FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
    }
  }
  std::atomic<int> state_{0};
};

template <class L>
class LockGuard {
 public:
  explicit LockGuard(L& l) : l_(l) { l_.lock(); }
  ~LockGuard() { l_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  L& l_;
};

// Depth of allocator critical sections on this thread. Read by signal
// handlers on the same thread, hence the signal fences around its updates.
extern constinit thread_local int t_allocator_depth __attribute__((tls_model("initial-exec")));
// Called when the outermost section ends (the stop-the-world code parks the
// thread there if a stop arrived inside the section).
extern std::atomic<void (*)()> g_section_exit_hook;

class AllocatorSection {
 public:
  AllocatorSection() {
    ++t_allocator_depth;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~AllocatorSection() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (--t_allocator_depth == 0) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (auto hook = g_section_exit_hook.load(std::memory_order_acquire)) hook();
    }
  }
  AllocatorSection(const AllocatorSection&) = delete;
  AllocatorSection& operator=(const AllocatorSection&) = delete;
};

}  // namespace libdump::internal
