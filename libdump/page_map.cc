#include "page_map.h"

#include <sys/mman.h>

namespace libdump::internal {

constinit PageMap g_page_map;

bool PageMap::Ensure(uintptr_t start, uintptr_t end) {
  for (uintptr_t page = start >> kPageShift; page < ((end - 1) >> kPageShift) + 1;
       page = ((page >> kLeafBits) + 1) << kLeafBits) {
    auto& slot = root_[page >> kLeafBits];
    if (slot.load(std::memory_order_relaxed) != nullptr) continue;
    // Untouched leaf pages cost nothing; a leaf covers 2 GiB of address space.
    void* mem = mmap(nullptr, sizeof(Leaf), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return false;
    slot.store(static_cast<Leaf*>(mem), std::memory_order_release);
  }
  return true;
}

void PageMap::Set(uintptr_t start, uintptr_t npages, Span* span) {
  uintptr_t page = start >> kPageShift;
  for (uintptr_t i = 0; i < npages; ++i, ++page) {
    Leaf* leaf = root_[page >> kLeafBits].load(std::memory_order_relaxed);
    (*leaf)[page & ((uintptr_t{1} << kLeafBits) - 1)].store(span, std::memory_order_relaxed);
  }
}

}  // namespace libdump::internal
