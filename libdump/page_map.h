// Maps every page of every arena to its span: a home window of 2 GiB from
// the first arena's start, then two levels over the 48-bit address space
// (2 MiB leaves mapped on demand) for everything else. An address outside
// our arenas reads as null.
#pragma once

#include <atomic>
#include <cstdint>

#include "config.h"

namespace libdump::internal {

struct Span;

class PageMap {
 public:
  static constexpr int kBits = kAddressBits - static_cast<int>(kPageShift);
  static constexpr int kLeafBits = 18;
  static constexpr int kRootBits = kBits - kLeafBits;
  static constexpr uintptr_t kHomeBytes = uintptr_t{1} << (kLeafBits + kPageShift);
  using Leaf = std::atomic<Span*>[size_t{1} << kLeafBits];

  // Why the home window: both free paths start here, and the radix walk is
  // two dependent loads (root entry, then leaf entry) before the span's own
  // line; the window's bounds and leaf do not depend on the address, so its
  // lookup is one. A heap that fits in its first arenas (which grow upwards
  // from the first) never reaches the radix.
  Span* Get(uintptr_t addr) const {
    // Bytes first: non-zero only once start and leaf are set (release in Ensure).
    const uintptr_t home_bytes = home_bytes_.load(std::memory_order_acquire);
    const uintptr_t off = addr - home_start_.load(std::memory_order_relaxed);
    if (LIBDUMP_LIKELY(off < home_bytes)) {
      return (*home_.load(std::memory_order_relaxed))[off >> kPageShift].load(std::memory_order_relaxed);
    }
    if (LIBDUMP_UNLIKELY(addr >> kAddressBits)) return nullptr;
    const uintptr_t page = addr >> kPageShift;
    Leaf* leaf = root_[page >> kLeafBits].load(std::memory_order_acquire);
    if (LIBDUMP_UNLIKELY(leaf == nullptr)) return nullptr;
    return (*leaf)[page & ((uintptr_t{1} << kLeafBits) - 1)].load(std::memory_order_relaxed);
  }
  // The home window's tags: for each page of a small span whose slots are
  // all plain (none typed or sampled), its class and the page's place in the
  // span (TagOf); 0 for every other page, and outside the window. Why: the
  // free fast path reads a tag (two bytes of a dense array, 512 KiB for the
  // whole window, mostly in cache) instead of the span's line and its bitmap
  // word, which were two load misses of every free in a heap bigger than
  // the caches.
  static uint32_t TagOf(int size_class, uint32_t page_in_span) { return static_cast<uint32_t>(size_class) | page_in_span << 8; }
  uint32_t Tag(uintptr_t addr) const {
    const uintptr_t home_bytes = home_bytes_.load(std::memory_order_acquire);
    const uintptr_t off = addr - home_start_.load(std::memory_order_relaxed);
    if (LIBDUMP_LIKELY(off < home_bytes)) return tags_.load(std::memory_order_relaxed)[off >> kPageShift].load(std::memory_order_relaxed);
    return 0;
  }
  // Tags the pages of [start, start + npages pages) as a span of class c (0:
  // untags them). Pages outside the window are left alone.
  void SetTags(uintptr_t start, uint32_t npages, int size_class);
  // The same for page `page` of the span at start alone.
  void SetTag(uintptr_t start, uint32_t page, int size_class);

  // Makes [start, end) settable; the first call places the home window at
  // start. Caller holds the page heap lock.
  bool Ensure(uintptr_t start, uintptr_t end);
  // Points every page of [start, start + npages pages) at span.
  void Set(uintptr_t start, uintptr_t npages, Span* span);
  // Radix leaves mapped so far (pages outside the home window).
  int radix_leaves() const { return radix_leaves_; }

 private:
  bool EnsureRadix(uintptr_t start, uintptr_t end);
  std::atomic<Span*>& Entry(uintptr_t addr);

  // Zero until the first Ensure: no address is in an empty window.
  std::atomic<uintptr_t> home_bytes_{0};
  std::atomic<uintptr_t> home_start_{0};
  std::atomic<Leaf*> home_{nullptr};
  std::atomic<std::atomic<uint16_t>*> tags_{nullptr};
  int radix_leaves_ = 0;
  std::atomic<Leaf*> root_[size_t{1} << kRootBits] = {};
};

extern LIBDUMP_HIDDEN PageMap g_page_map;

}  // namespace libdump::internal
