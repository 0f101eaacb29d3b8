#include "heap_walk.h"

#include "allocator.h"
#include "arena.h"
#include "fatal.h"
#include "page_heap.h"
#include "page_map.h"
#include "remote_batch.h"

namespace libdump::internal {

namespace {

// ORs into freed[w] the slots of span s that some thread has freed but not
// yet published. For the walk: no lock, no allocation.
void CollectBatchedFrees(const Span* s, uint64_t (&freed)[kBitmapWords]) {
  const int c = s->size_class;
  for (ThreadHeap* h = AllHeaps(); h != nullptr; h = h->next_all) {
    const RemoteBatches& b = h->batches;
    const RemoteBatch& e = b.entry[c];
    Span* span;
    uint32_t w;
    uint64_t bits;
    for (;;) {
      // A writer is inside a short section that takes no lock; a stopped
      // thread is never inside one.
      const uint32_t seq = b.seq.load(std::memory_order_acquire);
      span = e.span.load(std::memory_order_relaxed);
      w = e.word.load(std::memory_order_relaxed);
      bits = e.bits.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if ((seq & 1) == 0 && b.seq.load(std::memory_order_relaxed) == seq) break;
    }
    if (span == s && w < kBitmapWords) freed[w] |= bits;
  }
}

ObjectInfo Describe(const Span* s, uint32_t i) {
  ObjectInfo o{};
  if (s->state == SpanState::kLarge) {
    o.addr = s->start;
    o.size = SlotSize(s);
    o.type_id = s->large_type_id.load(std::memory_order_relaxed);
    o.count = s->large_count.load(std::memory_order_relaxed);
    o.sampled = s->large_sampled.load(std::memory_order_relaxed);
    return o;
  }
  o.addr = s->SlotAddress(i);
  o.size = s->slot_size;
  if (const SpanExtra* e = s->extra.load(std::memory_order_acquire)) {
    o.type_id = e->type_id[i].load(std::memory_order_relaxed);
    o.count = e->count[i].load(std::memory_order_relaxed);
  }
  o.sampled = (s->sampled[i >> 6].load(std::memory_order_relaxed) >> (i & 63)) & 1;
  return o;
}

// The span starting at page, or null if no span starts there. Each span's
// first page maps to it, free spans included.
const Span* SpanStartingAt(uintptr_t page) {
  const Span* s = g_page_map.Get(page);
  return s != nullptr && s->start == page && s->npages != 0 ? s : nullptr;
}

// The next span of a walk that steps from span end to span start.
const Span* WalkStep(uintptr_t page) {
  const Span* s = SpanStartingAt(page);
  if (s == nullptr) Fatal("heap walk: page map out of step", reinterpret_cast<void*>(page));
  return s;
}

// Reads spans through the page map, arena by arena; object memory is never
// touched.
void Walk(const StackedSlots& stacked, ObjectVisitor visit, void* context) {
  const size_t n = g_arenas.count();
  for (size_t a = 0; a < n; ++a) {
    const Arena arena = g_arenas.at(a);
    for (uintptr_t page = arena.start; page < arena.end;) {
      const Span* s = WalkStep(page);
      if (s->state == SpanState::kLarge) {
        if (!s->large_free.load(std::memory_order_acquire)) visit(Describe(s, 0), context);
      } else if (s->state == SpanState::kSmall) {
        // Frees other threads have batched but not published are frees, and
        // so are the slots on the owner's stack of recent frees.
        uint64_t freed[kBitmapWords] = {};
        CollectBatchedFrees(s, freed);
        stacked.Collect(s, freed);
        for (uint32_t w = 0; w < s->nwords(); ++w) {
          uint64_t bits = s->bits[w].live.load(std::memory_order_acquire) &
                          ~s->remote[w].load(std::memory_order_acquire) & ~freed[w];
          while (bits != 0) {
            const uint32_t i = w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
            bits &= bits - 1;
            visit(Describe(s, i), context);
          }
        }
      }
      page = s->end();
    }
  }
}

}  // namespace

void ForEachObject(const StackedSlots& stacked, ObjectVisitor visit, void* context) {
  Walk(stacked, visit, context);
}

void ForEachObject(ObjectVisitor visit, void* context) {
  StackedSlots stacked;
  stacked.Take();
  Walk(stacked, visit, context);
}

bool FindObject(const StackedSlots& stacked, const void* addr, ObjectInfo* out) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  const Span* s = g_page_map.Get(p);
  if (s == nullptr) return false;
  if (s->state == SpanState::kLarge) {
    if (s->large_free.load(std::memory_order_acquire)) return false;
    *out = Describe(s, 0);
    return true;
  }
  if (s->state != SpanState::kSmall) return false;
  const uint32_t i = s->SlotIndex(p);
  if (i >= s->nslots || !s->SlotLive(i)) return false;
  uint64_t batched[kBitmapWords] = {};
  CollectBatchedFrees(s, batched);
  if ((batched[i >> 6] >> (i & 63)) & 1) return false;
  if (stacked.Contains(s->SlotAddress(i), s->size_class)) return false;
  *out = Describe(s, i);
  return true;
}

uintptr_t SampleTokenOf(const void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const Span* s = g_page_map.Get(p);
  if (s == nullptr) return 0;
  uint32_t slot;
  if (s->state == SpanState::kLarge) {
    if (p != s->start) return 0;
    slot = 1;
  } else if (s->state == SpanState::kSmall) {
    const uint32_t i = s->SlotIndex(p);
    if (i >= s->nslots || s->SlotAddress(i) != p) return 0;
    slot = i + 1;
  } else {
    return 0;
  }
  uintptr_t token;
  return s->KeptSample(&token) == slot ? token : 0;
}

namespace {

struct KeptToken {
  uintptr_t addr;
  size_t size;
  uintptr_t token;
};

// Appends the kept tokens of the spans from arena `arena`, page `page` on,
// until `out` is full; returns how many, and where the next call starts
// (arena count: done). Caller holds the page heap lock, so the layout it
// walks is consistent; `page` is where the previous call stopped, which the
// layout may have changed since: if it no longer starts a span, the arena
// is walked from its start again, skipping what lies below `page`.
size_t CollectKeptTokens(size_t* arena, uintptr_t* page, KeptToken* out, size_t max) {
  size_t n = 0;
  for (; *arena < g_arenas.count(); ++*arena, *page = 0) {
    const Arena a = g_arenas.at(*arena);
    const uintptr_t skip_below = *page;
    uintptr_t at = a.start;
    if (skip_below > a.start && SpanStartingAt(skip_below) != nullptr) at = skip_below;
    while (at < a.end) {
      const Span* s = WalkStep(at);
      if (at >= skip_below && s->state != SpanState::kFree) {
        if (n == max) {
          *page = at;
          return n;
        }
        uintptr_t token;
        if (const uint32_t slot = s->KeptSample(&token)) {
          const bool large = s->state == SpanState::kLarge;
          out[n++] = {large ? s->start : s->SlotAddress(slot - 1), large ? SlotSize(s) : s->slot_size, token};
        }
      }
      at = s->end();
    }
  }
  return n;
}

}  // namespace

void ForEachKeptSampleToken(void (*visit)(void* ctx, uintptr_t addr, size_t size, uintptr_t token), void* ctx) {
  size_t arena = 0;
  uintptr_t page = 0;
  for (;;) {
    KeptToken batch[256];
    size_t n;
    {
      AllocatorSection section;
      LockGuard g(g_page_heap.mutex());
      n = CollectKeptTokens(&arena, &page, batch, 256);
    }
    for (size_t i = 0; i < n; ++i) visit(ctx, batch[i].addr, batch[i].size, batch[i].token);
    if (n < 256) return;
  }
}

}  // namespace libdump::internal

namespace libdump {

using namespace internal;

void WalkHeap(ObjectVisitor visit, void* context) {
  // The lock freezes span layout; slot bits are read atomically as they change.
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  StackedSlots stacked;
  stacked.Take();
  Walk(stacked, visit, context);
}

bool FindObject(const void* addr, ObjectInfo* out) {
  // Not taken: the stacks are searched only for a slot holding the key, so
  // the question stays O(1) whatever the number of threads.
  const StackedSlots stacked;
  return FindObject(stacked, addr, out);
}

HeapRange GetHeapRange() { return HeapRange{g_arenas.lowest(), g_arenas.highest()}; }

}  // namespace libdump
