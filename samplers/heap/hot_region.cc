#include "samplers/heap/hot_region.h"

#include <sys/mman.h>

#include "libdump/interface/sampler_interface.h"

namespace libdump::samplers {

HotRegion::~HotRegion() {
  if (base_ != 0) munmap(reinterpret_cast<void*>(base_), kSize);
}

void* HotRegion::Take(size_t n) {
  if (base_ == 0) {
    if (failed_) return nullptr;
    // A huge page needs a 2 MiB-aligned range.
    void* mem = internal::MapAnonymousAligned(kSize, kSize, 0);
    if (mem == nullptr) {
      failed_ = true;
      return nullptr;
    }
    const uintptr_t aligned = reinterpret_cast<uintptr_t>(mem);
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
