#include "heap_walk.h"

#include "allocator.h"
#include "arena.h"
#include "page_heap.h"
#include "page_map.h"
#include "remote_batch.h"

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

// Reads spans through the page map, arena by arena; object memory is never
// touched. Each span's first page maps to it, free spans included.
void Walk(ObjectVisitor visit, void* context) {
  const size_t n = g_arenas.count();
  for (size_t a = 0; a < n; ++a) {
    const Arena arena = g_arenas.at(a);
    for (uintptr_t page = arena.start; page < arena.end;) {
      const Span* s = g_page_map.Get(page);
      if (s == nullptr || s->start != page || s->npages == 0) {
        Fatal("heap walk: page map out of step", reinterpret_cast<void*>(page));
      }
      if (s->state == SpanState::kLarge) {
        visit(Describe(s, 0), context);
      } else if (s->state == SpanState::kSmall) {
        // Frees other threads have batched but not published are frees.
        uint64_t batched[kBitmapWords] = {};
        CollectBatchedFrees(s, batched);
        for (uint32_t w = 0; w < s->nwords(); ++w) {
          uint64_t bits = s->bits[w].live.load(std::memory_order_acquire) &
                          ~s->remote[w].load(std::memory_order_acquire) & ~batched[w];
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

void ForEachObject(ObjectVisitor visit, void* context) { Walk(visit, context); }

}  // namespace libdump::internal

namespace libdump {

using namespace internal;

void WalkHeap(ObjectVisitor visit, void* context) {
  // The lock freezes span layout; slot bits are read atomically as they change.
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  Walk(visit, context);
}

bool FindObject(const void* addr, ObjectInfo* out) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  const Span* s = g_page_map.Get(p);
  if (s == nullptr) return false;
  if (s->state == SpanState::kLarge) {
    *out = Describe(s, 0);
    return true;
  }
  if (s->state != SpanState::kSmall) return false;
  const uint32_t i = s->SlotIndex(p);
  if (i >= s->nslots || !s->SlotLive(i)) return false;
  uint64_t batched[kBitmapWords] = {};
  CollectBatchedFrees(s, batched);
  if ((batched[i >> 6] >> (i & 63)) & 1) return false;
  *out = Describe(s, i);
  return true;
}

HeapRange GetHeapRange() { return HeapRange{g_arenas.lowest(), g_arenas.highest()}; }

}  // namespace libdump
