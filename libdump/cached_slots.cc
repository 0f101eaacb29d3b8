#include "cached_slots.h"

#include <sys/mman.h>

#include <algorithm>

#include "central_freelist.h"
#include "debug_heap.h"
#include "free_list.h"
#include "lock.h"
#include "page_map.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump::internal {

namespace {

// Whether p can be a free slot of class c: a list the program corrupted (a
// write after free over a link) ends the walk of that list, not the process.
bool IsSlotOf(uintptr_t p, int c) {
  const Span* s = g_page_map.Get(p);
  if (s == nullptr || s->state != SpanState::kSmall || s->size_class != c) return false;
  const uint32_t i = s->SlotIndex(p);
  return i < s->nslots && s->SlotAddress(i) == p;
}

// Calls f(slot) for each slot on h's list of class c. A list is at most
// max_length long, one more while a push is under way; under the debug heap
// (max_length 0) it holds what is left of a batch.
template <typename F>
void ForEachListed(const ThreadHeap* h, int c, F&& f) {
  const ClassCache& cc = h->cache[c];
  const void* q = cc.head.load(std::memory_order_acquire);
  for (uint32_t n = 0; q != nullptr && n <= cc.max_length + cc.batch + 1; ++n, q = NextFree(q)) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(q);
    if (!IsSlotOf(a, c)) return;
    f(a);
  }
}

template <typename F>
void ForEachQuarantined(const ThreadHeap* h, int c, F&& f) {
  const uint32_t n = h->cache[c].quarantined.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < n && k < kQuarantineDepth; ++k) f(h->quarantine[c].slot[k].load(std::memory_order_relaxed));
}

}  // namespace

void CachedSlots::Take(bool every_heap) {
  Clear();
  ThreadHeap* const first = AllHeaps();
  size_t heaps = 0;
  for (const ThreadHeap* h = first; h != nullptr; h = h->next_all) ++heaps;
  // Every list at its longest (ForEachListed's bound: three batches of at
  // most 32, and two), every quarantine full, every transfer cache full (8
  // batches).
  const size_t cap = heaps * kNumClasses * (3 * 32 + 2 + kQuarantineDepth) + kNumClasses * 8 * 32;
  void* mem = mmap(nullptr, cap * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;
  addrs_ = static_cast<uintptr_t*>(mem);
  cap_ = cap;
  bytes_ = cap * sizeof(uintptr_t);
  const ThreadHeap* self = t_heap;
  for (const ThreadHeap* h = first; h != nullptr; h = h->next_all) {
    if (!every_heap && h != self) continue;
    for (int c = 1; c < kNumClasses; ++c) {
      ForEachListed(h, c, [&](uintptr_t a) { Add(a); });
      ForEachQuarantined(h, c, [&](uintptr_t a) { Add(a); });
    }
  }
  const auto add = [](void* ctx, uintptr_t a) { static_cast<CachedSlots*>(ctx)->Add(a); };
  if (every_heap) {
    ForEachTransferSlot(add, this);
  } else {
    // Among running threads the transfer caches change under their locks.
    AllocatorSection section;
    LockCentralLists();
    ForEachTransferSlot(add, this);
    UnlockCentralLists();
  }
  std::sort(addrs_, addrs_ + n_);
  copied_ = true;
}

void CachedSlots::Clear() {
  if (addrs_ != nullptr) munmap(addrs_, bytes_);
  addrs_ = nullptr;
  n_ = 0;
  cap_ = 0;
  bytes_ = 0;
  copied_ = false;
}

bool CachedSlots::Contains(uintptr_t p, int c) const {
  if (copied_) return std::binary_search(addrs_, addrs_ + n_, p);
  const void* slot = reinterpret_cast<const void*>(p);
  if (!HasFreeKey(slot)) return false;
  const ThreadHeap* self = t_heap;
  if (self != nullptr && (OnList(self, c, slot) || (g_debug_heap && InQuarantine(self, c, slot)))) return true;
  AllocatorSection section;
  LockGuard g(CentralLock(c));
  return InTransferCache(c, slot);
}

void CachedSlots::Collect(const Span* s, uint64_t* bits) const {
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
  if (const ThreadHeap* self = t_heap) {
    const auto in = [&](uintptr_t a) {
      if (a >= s->start && a < s->end()) set(a);
    };
    ForEachListed(self, s->size_class, in);
    ForEachQuarantined(self, s->size_class, in);
  }
}

}  // namespace libdump::internal
