// The page heap: hands out runs of pages as spans, takes them back, merges
// free neighbours and gives memory back to the OS (see ReleaseDownTo for
// when and what).
//
// Page map invariant: every page of an in-use span maps to it; a free span's
// first and last pages map to it and its inner pages map to nothing. So
// merging is O(1), and a stale entry can never name a recycled Span object.
//
// Committed pages are tracked exactly, one bit per page per arena: a page is
// committed from the moment it is handed out until it is released. A free
// span's dirty_pages is the count of its committed pages, so splits and
// merges keep it exact and a span carved from uncommitted pages reads as zero.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "libdump/heap.h"
#include "lock.h"
#include "span.h"

namespace libdump::internal {

class PageHeap {
 public:
  static constexpr size_t kPagesPerHugePage = kHugePageSize >> kPageShift;
  static constexpr size_t kSmallPagePrefix = size_t{256} << 20;

  // Everything below requires lock() to be held (and an AllocatorSection),
  // except where said.
  SpinLock& mutex() { return lock_; }

  // A span of exactly npages in state kLarge (the caller may change it).
  // Every page maps to it. nullptr when out of memory.
  Span* Alloc(size_t npages);
  // Like Alloc, with start aligned to align_pages pages (a power of two).
  Span* AllocAligned(size_t npages, size_t align_pages);
  // Returns an in-use span's pages.
  void Free(Span* s);

  // Release policy. Freed pages stay committed for reuse; every Alloc and
  // Free charges the clock: the free committed bytes that stayed unused
  // through a whole decay epoch were not needed, and half of them are
  // released per epoch elapsed. A hard cap (hard_limit()) bounds what the
  // decay keeps between epochs.
  static constexpr uint64_t kDecayEpochNs = 100'000'000;
  static constexpr uint64_t kDecayFloorBytes = uint64_t{2} << 20;
  static constexpr uint64_t kMinHardLimitBytes = uint64_t{64} << 20;
  // The cap follows the most bytes in use at any time in the last
  // kPeakEpochs epochs, not the bytes in use now: a program whose use swings
  // (big buffers freed and made again) otherwise had released at each free
  // what it faulted back in a moment later (the large workload: 3,667
  // madvise calls, 3x tcmalloc's time and no lower peak RSS).
  static constexpr int kPeakEpochs = 10;
  uint64_t hard_limit() const {
    uint64_t share = in_use_bytes();
    if (window_peak_ > share) share = window_peak_;
    if (epoch_peak_ > share) share = epoch_peak_;
    return share > kMinHardLimitBytes ? share : kMinHardLimitBytes;
  }
  // Releases committed free pages, highest addresses first, until at most
  // `keep` bytes remain committed or nothing more can go (huge-page regions
  // are released whole, never while part of them is in use). Returns the
  // bytes released.
  uint64_t ReleaseDownTo(uint64_t keep);
  // Committed pages among [start, start + npages pages) of one arena.
  size_t CommittedPages(uintptr_t start, size_t npages) const;
  // Monotonic nanoseconds for the decay; tests substitute their own clock.
  void SetClock(uint64_t (*now_ns)());
  // The decay step Alloc and Free run: ends the epoch if it is over.
  void Tick();

  // Huge pages (libdump::SetHugePages): kAuto keeps the first
  // kSmallPagePrefix bytes of the heap in small pages, so a small program
  // pays no huge-page RSS, and advises the rest. Applies to arenas mapped
  // afterwards; without a call the first Grow reads LIBDUMP_HUGEPAGES.
  void SetHugePages(HugePages mode);
  // Whether addr lies where its arena was advised MADV_HUGEPAGE.
  bool InHugeRegion(uintptr_t addr) const;

  SpanExtra* NewExtra();
  void DeleteExtra(SpanExtra* e);

  // Statistics, readable without the lock.
  uint64_t in_use_spans() const { return in_use_spans_.load(std::memory_order_relaxed); }
  uint64_t free_committed_bytes() const { return free_committed_.load(std::memory_order_acquire); }
  uint64_t returned_bytes() const { return returned_.load(std::memory_order_relaxed); }
  uint64_t in_use_bytes() const { return in_use_bytes_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kExactLists = 128;
  static constexpr size_t kMaxArenas = 16384;

  // Per arena (by arena_id): bounds, where huge pages start, committed bits.
  struct ArenaPages {
    uintptr_t start;
    uintptr_t end;
    uintptr_t huge_start;  // end when the arena has no huge-page part
    uint64_t* committed;
  };

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
  void MakeFree(Span* s);
  void MarkCommitted(const Span* s);
  uint64_t ReleaseFrom(Span* s, uint64_t want);
  uint64_t ReleaseRange(uint32_t arena_id, uintptr_t start, uintptr_t end);

  SpinLock lock_;
  SpanQueue normal_[kExactLists + 1];    // index npages; 0 holds longer spans
  SpanQueue released_[kExactLists + 1];  // spans with no committed page
  Span* free_span_objects_ = nullptr;
  SpanExtra* free_extras_ = nullptr;
  uint32_t next_arena_id_ = 0;
  ArenaPages arena_pages_[kMaxArenas + 1] = {};
  // Meaningful once huge_mode_set_ (SetHugePages, or the environment at the
  // first Grow). Zero-initialized, unlike kAuto: any non-zero field puts all
  // 526 KB of g_page_heap in .data, whose file-backed pages the kernel maps
  // 16 at a time on first touch (92 KB resident in a process that allocates
  // nothing), where .bss costs one zero page per page touched.
  HugePages huge_mode_{};
  bool huge_mode_set_ = false;
  uint64_t (*clock_)() = nullptr;
  uint64_t epoch_end_ = 0;
  uint64_t idle_min_ = 0;  // least free committed bytes seen this epoch
  uint64_t epoch_peak_ = 0;  // most bytes in use seen this epoch
  uint64_t epoch_peaks_[kPeakEpochs] = {};  // of the last epochs, a ring
  int peak_slot_ = 0;
  uint64_t window_peak_ = 0;  // the most of epoch_peaks_
  uint64_t stuck_at_ = 0;  // free committed bytes the hard cap could not release
  std::atomic<uint64_t> in_use_spans_{0};
  std::atomic<uint64_t> in_use_bytes_{0};
  std::atomic<uint64_t> free_committed_{0};
  std::atomic<uint64_t> returned_{0};
};

extern PageHeap g_page_heap;

}  // namespace libdump::internal
