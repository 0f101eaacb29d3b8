#include "stacked_slots.h"

#include <sys/mman.h>

#include <algorithm>

#include "recent_frees.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump::internal {

uint64_t g_stacked_key = 1;  // replaced at initialization (EnsureInitialized)

namespace {

// Calls f(slot) for every slot on heap h's stack of class c.
template <typename F>
void ForEachStacked(const ThreadHeap* h, int c, F&& f) {
  const uint32_t n = RecentHeight(h->cache[c].recent.load(std::memory_order_acquire));
  for (uint32_t k = 0; k < n && k < kRecentDepth; ++k) f(h->recent[c].slot[k].load(std::memory_order_relaxed));
}

}  // namespace

bool OnStack(const ThreadHeap* h, int c, uintptr_t p) {
  bool found = false;
  ForEachStacked(h, c, [&](uintptr_t a) { found |= a == p; });
  return found;
}

void StackedSlots::Take() {
  Clear();
  ThreadHeap* const first = AllHeaps();
  size_t heaps = 0;
  for (const ThreadHeap* h = first; h != nullptr; h = h->next_all) ++heaps;
  const size_t cap = heaps * kNumClasses * kRecentDepth;
  if (cap == 0) {
    copied_ = true;
    return;
  }
  void* mem = mmap(nullptr, cap * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;
  addrs_ = static_cast<uintptr_t*>(mem);
  bytes_ = cap * sizeof(uintptr_t);
  for (const ThreadHeap* h = first; h != nullptr; h = h->next_all) {
    for (int c = 1; c < kNumClasses; ++c) ForEachStacked(h, c, [&](uintptr_t a) { addrs_[n_++] = a; });
  }
  std::sort(addrs_, addrs_ + n_);
  copied_ = true;
}

void StackedSlots::Clear() {
  if (addrs_ != nullptr) munmap(addrs_, bytes_);
  addrs_ = nullptr;
  n_ = 0;
  bytes_ = 0;
  copied_ = false;
}

bool StackedSlots::Contains(uintptr_t p, int c) const {
  if (copied_) return std::binary_search(addrs_, addrs_ + n_, p);
  if (!HasStackedKey(reinterpret_cast<const void*>(p))) return false;
  for (const ThreadHeap* h = AllHeaps(); h != nullptr; h = h->next_all) {
    if (OnStack(h, c, p)) return true;
  }
  return false;
}

void StackedSlots::Collect(const Span* s, uint64_t* bits) const {
  const auto set = [&](uintptr_t a) {
    const uint32_t i = s->SlotIndex(a);
    bits[i >> 6] |= uint64_t{1} << (i & 63);
  };
  if (copied_) {
    for (const uintptr_t* a = std::lower_bound(addrs_, addrs_ + n_, s->start); a != addrs_ + n_ && *a < s->end(); ++a) {
      set(*a);
    }
    return;
  }
  for (const ThreadHeap* h = AllHeaps(); h != nullptr; h = h->next_all) {
    ForEachStacked(h, s->size_class, [&](uintptr_t a) {
      if (a >= s->start && a < s->end()) set(a);
    });
  }
}

}  // namespace libdump::internal
