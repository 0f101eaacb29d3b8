#include "hot_region.h"

#include <sys/mman.h>

namespace libdump::samplers {

HotRegion::~HotRegion() {
  if (base_ != 0) munmap(reinterpret_cast<void*>(base_), kSize);
}

void* HotRegion::Take(size_t n) {
  if (base_ == 0) {
    if (failed_) return nullptr;
    // Twice the size, then the unaligned ends unmapped: mmap aligns to pages
    // only, and a huge page needs a 2 MiB-aligned range.
    void* raw = mmap(nullptr, 2 * kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      failed_ = true;
      return nullptr;
    }
    const uintptr_t r = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (r + kSize - 1) & ~(kSize - 1);
    if (aligned > r) munmap(raw, aligned - r);
    if (r + 2 * kSize > aligned + kSize) munmap(reinterpret_cast<void*>(aligned + kSize), r + 2 * kSize - aligned - kSize);
    // Advice only: without transparent huge pages the region still works,
    // on small pages.
    madvise(reinterpret_cast<void*>(aligned), kSize, MADV_HUGEPAGE);
    base_ = aligned;
  }
  n = (n + 63) & ~size_t{63};
  if (n > kSize - used_) return nullptr;
  void* p = reinterpret_cast<void*>(base_ + used_);
  used_ += n;
  return p;
}

}  // namespace libdump::samplers
