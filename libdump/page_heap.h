// The page heap: hands out runs of pages as spans, takes them back, merges
// free neighbours and gives memory back to the OS with madvise when more
// empty pages are kept than retain_limit().
//
// Page map invariant: every page of an in-use span maps to it; a free span's
// first and last pages map to it and its inner pages map to nothing. So
// merging is O(1), and a stale entry can never name a recycled Span object.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "lock.h"
#include "span.h"

namespace libdump::internal {

class PageHeap {
 public:
  // Everything below requires lock() to be held (and an AllocatorSection).
  SpinLock& mutex() { return lock_; }

  // A span of exactly npages in state kLarge (the caller may change it).
  // Every page maps to it. nullptr when out of memory.
  Span* Alloc(size_t npages);
  // Like Alloc, with start aligned to align_pages pages (a power of two).
  Span* AllocAligned(size_t npages, size_t align_pages);
  // Returns an in-use span's pages; `touched` says whether they may hold
  // data (and so be committed).
  void Free(Span* s, bool touched = true);

  SpanExtra* NewExtra();
  void DeleteExtra(SpanExtra* e);

  // Statistics, readable without the lock.
  uint64_t in_use_spans() const { return in_use_spans_.load(std::memory_order_relaxed); }
  uint64_t free_committed_bytes() const { return free_committed_.load(std::memory_order_relaxed); }
  uint64_t returned_bytes() const { return returned_.load(std::memory_order_relaxed); }
  uint64_t in_use_bytes() const { return in_use_bytes_.load(std::memory_order_relaxed); }

  // Empty pages kept committed for reuse before madvise gives them back:
  // a floor, or a share of the heap in use, so that a program cycling large
  // buffers does not fault them in again every time.
  static constexpr uint64_t kMinRetainBytes = uint64_t{64} << 20;
  uint64_t retain_limit() const {
    const uint64_t share = in_use_bytes() / 8;
    return share > kMinRetainBytes ? share : kMinRetainBytes;
  }

 private:
  static constexpr size_t kExactLists = 128;

  Span* NewSpanObject();
  void DeleteSpanObject(Span* s);
  SpanQueue& ListFor(const Span* s) {
    const size_t i = s->npages <= kExactLists ? s->npages : 0;
    return s->dirty_pages == 0 ? released_[i] : normal_[i];
  }
  void Insert(Span* s);
  void Unlink(Span* s);
  Span* Find(size_t npages);
  Span* Carve(Span* s, size_t npages);
  bool Grow(size_t npages);
  Span* MergeNeighbours(Span* s);
  void Release(Span* s);

  SpinLock lock_;
  SpanQueue normal_[kExactLists + 1];    // index npages; 0 holds longer spans
  SpanQueue released_[kExactLists + 1];
  Span* free_span_objects_ = nullptr;
  SpanExtra* free_extras_ = nullptr;
  uint32_t next_arena_id_ = 0;
  std::atomic<uint64_t> in_use_spans_{0};
  std::atomic<uint64_t> in_use_bytes_{0};
  std::atomic<uint64_t> free_committed_{0};
  std::atomic<uint64_t> returned_{0};
};

extern PageHeap g_page_heap;

}  // namespace libdump::internal
