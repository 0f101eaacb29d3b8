#include "heap_walk.h"

#include "allocator.h"
#include "arena.h"
#include "fatal.h"
#include "page_heap.h"
#include "page_map.h"

namespace libdump::internal {

namespace {

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
void Walk(const CachedSlots& cached, ObjectVisitor visit, void* context) {
  const size_t n = g_arenas.count();
  for (size_t a = 0; a < n; ++a) {
    const Arena arena = g_arenas.at(a);
    for (uintptr_t page = arena.start; page < arena.end;) {
      const Span* s = WalkStep(page);
      if (s->state == SpanState::kLarge) {
        if (!s->large_free.load(std::memory_order_acquire)) visit(Describe(s, 0), context);
      } else if (s->state == SpanState::kSmall) {
        // Slots out of the central list and cached are free.
        uint64_t freed[kBitmapWords] = {};
        cached.Collect(s, freed);
        for (uint32_t w = 0; w < s->nwords(); ++w) {
          uint64_t bits = s->bits[w].live.load(std::memory_order_acquire) & ~freed[w];
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

void ForEachObject(const CachedSlots& cached, ObjectVisitor visit, void* context) {
  Walk(cached, visit, context);
}

void ForEachObject(ObjectVisitor visit, void* context) {
  CachedSlots cached;
  cached.Take(/*every_heap=*/true);
  Walk(cached, visit, context);
}

bool FindObject(const CachedSlots& cached, const void* addr, ObjectInfo* out) {
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
  if (i >= s->nslots || !s->SlotOut(i)) return false;
  if (cached.Contains(s->SlotAddress(i), s->size_class)) return false;
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
  // Taken before the page heap's lock, which the central locks come before.
  CachedSlots cached;
  cached.Take(/*every_heap=*/false);
  // The lock freezes span layout; slot bits are read atomically as they change.
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  Walk(cached, visit, context);
}

bool FindObject(const void* addr, ObjectInfo* out) {
  // Not taken: the calling thread's lists are searched only for a slot
  // holding the key, so the question stays O(1).
  const CachedSlots cached;
  return FindObject(cached, addr, out);
}

HeapRange GetHeapRange() { return HeapRange{g_arenas.lowest(), g_arenas.highest()}; }

}  // namespace libdump
