#include "central_freelist.h"

#include "debug_heap.h"
#include "fatal.h"
#include "free_list.h"
#include "page_heap.h"
#include "page_map.h"

namespace libdump::internal {

namespace {

// Whole batches (BatchSlots of the class), as tcmalloc's transfer cache
// keeps them: a producer thread's list takes in O(1) what a consumer's
// gave.
constexpr uint32_t kTransferBatches = 8;

struct Batch {
  std::atomic<void*> head;
  std::atomic<uint32_t> n;
};

struct alignas(64) Central {
  SpinLock lock;
  std::atomic<uint32_t> nbatches{0};
  SpanQueue nonempty;  // spans with a free slot (list kNonempty)
  Batch batches[kTransferBatches] = {};
};
constinit Central g_central[kNumClasses];
// libdump's own spans (OwnTake): no transfer cache, only the spans.
constinit Central g_own_central[kNumClasses];

Span* NewSmallSpan(int c, bool own) {
  const ClassInfo& ci = g_classes[c];
  LockGuard g(g_page_heap.mutex());
  Span* s = g_page_heap.Alloc(ci.npages);
  if (s == nullptr) return nullptr;
  s->size_class = static_cast<uint8_t>(c);
  s->slot_size = ci.size;
  s->nslots = ci.nslots;
  s->div_magic = ci.div_magic;
  s->used = 0;
  for (uint32_t w = 0; w < kBitmapWords; ++w) {
    s->bits[w].live.store(0, std::memory_order_relaxed);
    s->bits[w].annotated.store(0, std::memory_order_relaxed);
    s->sampled[w].store(0, std::memory_order_relaxed);
  }
  s->sample_slot.store(0, std::memory_order_relaxed);
  s->state = SpanState::kSmall;
  s->own = own;
  if (!own) g_page_map.SetTags(s->start, s->npages, c);
  if (g_debug_heap) Poison(reinterpret_cast<void*>(s->start), size_t{s->nslots} * s->slot_size);
  return s;
}

// Sets the live bits of up to n free slots of the class's spans (own: of
// libdump's own spans, OwnTake) and links them, in address order, after *last.
uint32_t TakeFromSpans(Central& k, int c, uint32_t n, void** first, bool own) {
  uint32_t got = 0;
  void* last = nullptr;
  while (got < n) {
    Span* s = k.nonempty.front();
    if (s == nullptr) {
      s = NewSmallSpan(c, own);
      if (s == nullptr) break;
      s->list = SpanList::kNonempty;
      k.nonempty.PushFront(s);
    }
    for (uint32_t w = 0; w < s->nwords() && got < n; ++w) {
      uint64_t free = ~s->bits[w].live.load(std::memory_order_relaxed) & s->ValidMask(w);
      uint64_t taken = 0;
      for (; free != 0 && got < n; free &= free - 1, ++got) {
        const unsigned b = static_cast<unsigned>(__builtin_ctzll(free));
        taken |= uint64_t{1} << b;
        void* p = reinterpret_cast<void*>(s->SlotAddress(w * 64 + b));
        if (LIBDUMP_UNLIKELY(g_debug_heap)) CheckPoison(p, s->slot_size, 0);
        // Stores only: a read of each slot here (to catch one that a second
        // free put on a list while it was back in its span) missed on every
        // slot, 40 % of this path's time on cross-B.
        SetFreeKey(p);
        if (last != nullptr) {
          SetNextFree(last, p);
        } else {
          *first = p;
        }
        last = p;
      }
      if (taken != 0) {
        SetBits(s->bits[w].live, taken, std::memory_order_release);
        s->used += CountBits(taken);
      }
    }
    if (s->used == s->nslots) {
      k.nonempty.Remove(s);
      s->list = SpanList::kFull;
    }
  }
  if (last != nullptr) SetNextFree(last, nullptr);
  return got;
}

// Clears the live bits of a chain's slots; a span that empties goes back to
// the page heap.
void GiveToSpans(Central& k, void* p, uint32_t n) {
  for (; n != 0; --n) {
    void* next = n > 1 ? NextFree(p) : nullptr;  // a lone slot's link is not read: the debug heap's poison
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Span* s = g_page_map.Get(a);
    const uint32_t i = s->SlotIndex(a);
    const uint64_t m = uint64_t{1} << (i & 63);
    if ((s->bits[i >> 6].live.load(std::memory_order_relaxed) & m) == 0) Fatal("double free", p);
    // The debug heap keeps every word of a free slot poisoned.
    StoreKeyWord(p, LIBDUMP_UNLIKELY(g_debug_heap) ? kPoisonWord : 0);
    ClearBits(s->bits[i >> 6].live, m, std::memory_order_release);
    if (s->list == SpanList::kFull) {
      s->list = SpanList::kNonempty;
      k.nonempty.PushFront(s);
    }
    if (--s->used == 0) {
      k.nonempty.Remove(s);
      s->list = SpanList::kNone;
      ReleaseSmallSpan(s);
    }
    p = next;
  }
}

}  // namespace

SpinLock& CentralLock(int c) { return g_central[c].lock; }

uint32_t CentralTake(int c, uint32_t n, void** head) {
  Central& k = g_central[c];
  const uint32_t nb = k.nbatches.load(std::memory_order_relaxed);
  if (nb != 0) {
    Batch& b = k.batches[nb - 1];
    *head = b.head.load(std::memory_order_relaxed);
    k.nbatches.store(nb - 1, std::memory_order_relaxed);
    return b.n.load(std::memory_order_relaxed);
  }
  return TakeFromSpans(k, c, n, head, false);
}

void CentralGive(int c, void* head, uint32_t n, bool to_spans) {
  Central& k = g_central[c];
  const uint32_t nb = k.nbatches.load(std::memory_order_relaxed);
  if (!to_spans && n == BatchSlots(g_classes[c].size) && nb < kTransferBatches && !g_debug_heap) {
    k.batches[nb].head.store(head, std::memory_order_relaxed);
    k.batches[nb].n.store(n, std::memory_order_relaxed);
    k.nbatches.store(nb + 1, std::memory_order_release);
    return;
  }
  GiveToSpans(k, head, n);
}

namespace {

// Calls f(slot) for every slot of class c's transfer cache.
template <typename F>
void ForEachBatchedSlot(const Central& k, F&& f) {
  const uint32_t nb = k.nbatches.load(std::memory_order_acquire);
  for (uint32_t b = 0; b < nb && b < kTransferBatches; ++b) {
    const void* q = k.batches[b].head.load(std::memory_order_relaxed);
    for (uint32_t j = k.batches[b].n.load(std::memory_order_relaxed); j != 0 && q != nullptr; --j, q = NextFree(q)) f(q);
  }
}

}  // namespace

bool InTransferCache(int c, const void* p) {
  bool found = false;
  ForEachBatchedSlot(g_central[c], [&](const void* q) { found |= q == p; });
  return found;
}

void ForEachTransferSlot(void (*f)(void* ctx, uintptr_t slot), void* ctx) {
  for (int c = 1; c < kNumClasses; ++c) {
    ForEachBatchedSlot(g_central[c], [&](const void* q) { f(ctx, reinterpret_cast<uintptr_t>(q)); });
  }
}

void DrainTransferCaches() {
  for (int c = 1; c < kNumClasses; ++c) {
    Central& k = g_central[c];
    AllocatorSection section;
    LockGuard g(k.lock);
    for (uint32_t b = k.nbatches.load(std::memory_order_relaxed); b != 0; --b) {
      k.nbatches.store(b - 1, std::memory_order_release);
      GiveToSpans(k, k.batches[b - 1].head.load(std::memory_order_relaxed), k.batches[b - 1].n.load(std::memory_order_relaxed));
    }
  }
}

void ReleaseSmallSpan(Span* s) {
  // Every slot is free, so poisoned: the last chance to see a write after
  // free.
  if (LIBDUMP_UNLIKELY(g_debug_heap)) {
    for (uint32_t i = 0; i < s->nslots; ++i) CheckPoison(reinterpret_cast<void*>(s->SlotAddress(i)), s->slot_size, 0);
  }
  g_page_map.SetTags(s->start, s->npages, 0);
  LockGuard g(g_page_heap.mutex());
  if (SpanExtra* e = s->extra.load(std::memory_order_relaxed)) {
    s->extra.store(nullptr, std::memory_order_relaxed);
    g_page_heap.DeleteExtra(e);
  }
  g_page_heap.Free(s);
}

void* OwnTake(int c) {
  Central& k = g_own_central[c];
  AllocatorSection section;
  LockGuard g(k.lock);
  void* p = nullptr;
  if (TakeFromSpans(k, c, 1, &p, true) == 0) return nullptr;
  ClearLinks(p);
  return p;
}

void OwnGive(int c, void* p) {
  Central& k = g_own_central[c];
  AllocatorSection section;
  LockGuard g(k.lock);
  // The debug heap's spans keep every free slot poisoned (TakeFromSpans checks).
  if (LIBDUMP_UNLIKELY(g_debug_heap)) Poison(p, g_classes[c].size);
  GiveToSpans(k, p, 1);
}

void LockCentralLists() {
  for (auto& k : g_central) k.lock.lock();
  for (auto& k : g_own_central) k.lock.lock();
}
void UnlockCentralLists() {
  for (auto& k : g_own_central) k.lock.unlock();
  for (auto& k : g_central) k.lock.unlock();
}
void CentralForkChild() {
  for (auto& k : g_central) k.lock.ResetAfterFork();
  for (auto& k : g_own_central) k.lock.ResetAfterFork();
}

}  // namespace libdump::internal
