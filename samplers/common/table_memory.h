// The lock and the memory of the profilers' bucket tables (the heap
// profile's and the contention profiles'). Neither calls malloc: a table is
// written from inside the allocator's sampling hook and from interposed
// pthread calls, where malloc may be the caller.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>

namespace libdump::samplers {

// Held for a bucket lookup or insert, never across a wait: a spin that yields.
// One byte, so that a table can keep it on the line its samples touch.
class TableLock {
 public:
  void Lock() {
    while (held_.exchange(true, std::memory_order_acquire)) {
      while (held_.load(std::memory_order_relaxed)) sched_yield();
    }
  }
  void Unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// Bump allocation from mapped chunks of at least `chunk` bytes, rounded to
// `align` (a power of two); never freed, since buckets live as long as the
// table and pointers to them are handed out.
class TableArena {
 public:
  template <class MapFn>
  void* Alloc(size_t n, size_t align, size_t chunk, MapFn map) {
    n = (n + align - 1) & ~(align - 1);
    if (n > left_) {
      const size_t c = n > chunk ? n : chunk;
      next_ = static_cast<char*>(map(c));
      left_ = c;
    }
    void* p = next_;
    next_ += n;
    left_ -= n;
    return p;
  }

 private:
  char* next_ = nullptr;
  size_t left_ = 0;
};

}  // namespace libdump::samplers
