// Maps every page of every arena to its span: two levels over the 48-bit
// address space (2 MiB leaves mapped on demand), so a lookup is two loads and
// an address outside our arenas reads as null.
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
  using Leaf = std::atomic<Span*>[size_t{1} << kLeafBits];

  Span* Get(uintptr_t addr) const {
    if (LIBDUMP_UNLIKELY(addr >> kAddressBits)) return nullptr;
    const uintptr_t page = addr >> kPageShift;
    Leaf* leaf = root_[page >> kLeafBits].load(std::memory_order_acquire);
    if (LIBDUMP_UNLIKELY(leaf == nullptr)) return nullptr;
    return (*leaf)[page & ((uintptr_t{1} << kLeafBits) - 1)].load(std::memory_order_relaxed);
  }
  // Makes [start, end) settable. Caller holds the page heap lock.
  bool Ensure(uintptr_t start, uintptr_t end);
  // Points every page of [start, start + npages pages) at span.
  void Set(uintptr_t start, uintptr_t npages, Span* span);

 private:
  std::atomic<Leaf*> root_[size_t{1} << kRootBits] = {};
};

extern PageMap g_page_map;

}  // namespace libdump::internal
