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
  int radix_leaves_ = 0;
  std::atomic<Leaf*> root_[size_t{1} << kRootBits] = {};
};

extern LIBDUMP_HIDDEN PageMap g_page_map;

}  // namespace libdump::internal
