// Address space: arenas (large mmap reservations that spans are cut from) and
// the metadata region (spans, thread heaps, bitmaps' side tables), which is
// never inside an arena so that the heap holds objects only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.h"

namespace libdump::internal {

struct Arena {
  uintptr_t start;
  uintptr_t end;
};

class ArenaSet {
 public:
  static constexpr size_t kMaxArenas = 16384;
  // Maps a new arena of `bytes` (a multiple of kArenaSize), aligned to a huge
  // page, and keeps the list sorted by address. Caller holds the page heap
  // lock. Returns {0, 0} when the system has no more memory to give.
  Arena Grow(size_t bytes);
  // Readable without the lock: arenas are only ever added, and `count`
  // is published after the slot is written. Order is by address.
  size_t count() const { return count_.load(std::memory_order_acquire); }
  Arena at(size_t i) const {
    return Arena{starts_[i].load(std::memory_order_relaxed), ends_[i].load(std::memory_order_relaxed)};
  }
  uintptr_t lowest() const { return lo_.load(std::memory_order_acquire); }
  uintptr_t highest() const { return hi_.load(std::memory_order_acquire); }
  uint64_t reserved_bytes() const { return reserved_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uintptr_t> starts_[kMaxArenas] = {};
  std::atomic<uintptr_t> ends_[kMaxArenas] = {};
  std::atomic<size_t> count_{0};
  std::atomic<uintptr_t> lo_{0};
  std::atomic<uintptr_t> hi_{0};
  std::atomic<uint64_t> reserved_{0};
};

extern ArenaSet g_arenas;

// Bump allocator for metadata: zeroed, 64-byte aligned, never freed (callers
// recycle their objects on free lists of their own).
void* MetaAlloc(size_t bytes);
uint64_t MetaBytes();
// Whether metadata past its first MiBs is advised MADV_HUGEPAGE (follows
// SetHugePages: off only when huge pages are off).
void SetMetaHugePages(bool on);
void MetaForkPrepare();
void MetaForkParent();
void MetaForkChild();

}  // namespace libdump::internal
