#include "page_map.h"

#include <sys/mman.h>

#include <algorithm>

namespace libdump::internal {

constinit PageMap g_page_map;

namespace {

// Untouched leaf pages cost nothing; a leaf covers 2 GiB of address space.
PageMap::Leaf* MapLeaf() {
  void* mem = mmap(nullptr, sizeof(PageMap::Leaf), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return mem == MAP_FAILED ? nullptr : static_cast<PageMap::Leaf*>(mem);
}

}  // namespace

bool PageMap::Ensure(uintptr_t start, uintptr_t end) {
  if (home_bytes_.load(std::memory_order_relaxed) == 0) {
    Leaf* leaf = MapLeaf();
    if (leaf == nullptr) return false;
    void* tags = mmap(nullptr, (size_t{1} << kLeafBits) * sizeof(uint16_t), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (tags == MAP_FAILED) {
      munmap(leaf, sizeof(Leaf));
      return false;
    }
    tags_.store(static_cast<std::atomic<uint16_t>*>(tags), std::memory_order_relaxed);
    home_.store(leaf, std::memory_order_relaxed);
    home_start_.store(start & ~(kPageSize - 1), std::memory_order_relaxed);
    home_bytes_.store(kHomeBytes, std::memory_order_release);
  }
  const uintptr_t home_start = home_start_.load(std::memory_order_relaxed);
  const uintptr_t home_end = home_start + kHomeBytes;
  if (start < home_start && !EnsureRadix(start, std::min(end, home_start))) return false;
  if (end > home_end && !EnsureRadix(std::max(start, home_end), end)) return false;
  return true;
}

bool PageMap::EnsureRadix(uintptr_t start, uintptr_t end) {
  for (uintptr_t page = start >> kPageShift; page < ((end - 1) >> kPageShift) + 1;
       page = ((page >> kLeafBits) + 1) << kLeafBits) {
    auto& slot = root_[page >> kLeafBits];
    if (slot.load(std::memory_order_relaxed) != nullptr) continue;
    Leaf* leaf = MapLeaf();
    if (leaf == nullptr) return false;
    slot.store(leaf, std::memory_order_release);
    ++radix_leaves_;
  }
  return true;
}

std::atomic<Span*>& PageMap::Entry(uintptr_t addr) {
  const uintptr_t off = addr - home_start_.load(std::memory_order_relaxed);
  if (off < home_bytes_.load(std::memory_order_relaxed)) return (*home_.load(std::memory_order_relaxed))[off >> kPageShift];
  const uintptr_t page = addr >> kPageShift;
  Leaf* leaf = root_[page >> kLeafBits].load(std::memory_order_relaxed);
  return (*leaf)[page & ((uintptr_t{1} << kLeafBits) - 1)];
}

void PageMap::SetTag(uintptr_t start, uint32_t page, int size_class) {
  const uintptr_t off = start + (uintptr_t{page} << kPageShift) - home_start_.load(std::memory_order_relaxed);
  if (off >= home_bytes_.load(std::memory_order_relaxed)) return;
  tags_.load(std::memory_order_relaxed)[off >> kPageShift].store(
      static_cast<uint16_t>(size_class == 0 ? 0 : TagOf(size_class, page)), std::memory_order_relaxed);
}

void PageMap::SetTags(uintptr_t start, uint32_t npages, int size_class) {
  for (uint32_t i = 0; i < npages; ++i) SetTag(start, i, size_class);
}

void PageMap::Set(uintptr_t start, uintptr_t npages, Span* span) {
  for (uintptr_t i = 0; i < npages; ++i) {
    Entry(start + (i << kPageShift)).store(span, std::memory_order_relaxed);
  }
}

}  // namespace libdump::internal
