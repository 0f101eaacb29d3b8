// The allocation and free fast paths, inline so that malloc_interpose.cc and
// the public API compile to a handful of instructions before any call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "allocator_state.h"
#include "config.h"
#include "debug_heap.h"
#include "page_map.h"
#include "size_class.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump::internal {

void* AllocateSlow(size_t size);
void FreeSlow(void* p, Span* s);
// The two ends of a heap sample, apart from the other slow paths: a sample
// comes a few hundred allocations after the last one, and a path shared with
// large objects and refills would find its branches trained by them.
// AllocateSampled: the allocation of class c (h's) that the sampling
// countdown picked (always, under the debug heap).
void* AllocateSampled(size_t size, ThreadHeap* h, int c);

// A slot on a list without the key: freed twice (its first copy on a list
// was handed out, which cleared the key), or written after its free.
[[noreturn]] void ListSlotWithoutKey(void* p);

// The head p of class c's list (not null) handed out. The key's test reads
// the line the link is read from: a slot freed twice is caught here, before
// it is handed out a second time (free_list.h).
__attribute__((always_inline)) inline void* PopList(ClassCache& cc, void* p) {
  if (LIBDUMP_UNLIKELY(!HasFreeKey(p))) ListSlotWithoutKey(p);
  cc.head.store(NextFree(p), std::memory_order_relaxed);
  cc.list.store(cc.list.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  ClearLinks(p);
  return p;
}

// The head of class c's list handed out, the list refilled first if it is
// empty; null when out of memory.
inline void* PopOrRefill(ThreadHeap* h, ClassCache& cc, int c) {
  void* p = cc.head.load(std::memory_order_relaxed);
  if (p == nullptr) {
    if (!RefillList(h, c)) return nullptr;
    p = cc.head.load(std::memory_order_relaxed);
  }
  return PopList(cc, p);
}

// A free whose checks passed: onto the freeing thread's list of the class,
// whichever thread allocated the slot. The head is stored after the link
// and the key, so that a walk of a thread stopped anywhere here finds a
// well-formed list (the slot on it or not yet).
__attribute__((always_inline)) inline void PushList(ThreadHeap* h, uint32_t c, void* p, void* head) {
  ClassCache& cc = h->cache[c];
  SetNextFree(p, head);
  SetFreeKey(p);
  cc.head.store(p, std::memory_order_relaxed);
  const uint64_t l = cc.list.load(std::memory_order_relaxed) + kPush;
  cc.list.store(l, std::memory_order_relaxed);
  if (LIBDUMP_UNLIKELY(ListLength(l) > cc.max_length)) ShrinkList(h, static_cast<int>(c));
}
__attribute__((always_inline)) inline void PushList(ThreadHeap* h, uint32_t c, void* p) {
  PushList(h, c, p, h->cache[c].head.load(std::memory_order_relaxed));
}

// always_inline: GCC would otherwise keep one out-of-line copy, called
// through the PLT from every entry point of libdump.so.
__attribute__((always_inline)) inline void* AllocateFast(size_t size) {
  ThreadHeap* h = t_heap;
  if (LIBDUMP_LIKELY(h != nullptr && size <= kMaxSmallSize)) {
    const int c = SizeToClass(size);
    ClassCache& cc = h->cache[c];
    // The sampling countdown comes first: when it would go negative,
    // AllocateSampled takes the sample. (Under the debug heap it always is:
    // every malloc goes that way, to DebugAllocate.)
    const int64_t left = h->sample_left - cc.slot_size;
    if (LIBDUMP_UNLIKELY(left < 0)) return AllocateSampled(size, h, c);
    void* p = cc.head.load(std::memory_order_relaxed);
    if (LIBDUMP_LIKELY(p != nullptr)) {
      h->sample_left = left;
      return PopList(cc, p);
    }
  }
  return AllocateSlow(size);
}

// The free of a pointer whose page has no tag (PageMap::Tag): a large
// object, a slot of a span with annotated slots, a page outside the home
// window, or misuse.
void FreeUntagged(void* ptr);

__attribute__((always_inline)) inline void FreeFast(void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const uint32_t tag = g_page_map.Tag(p);
  ThreadHeap* h = t_heap;
  if (LIBDUMP_LIKELY(tag != 0 && h != nullptr)) {
    // The offset in the span from the tag, and the class's divisibility
    // test from the line the push writes, nothing of the span itself: an
    // interior pointer, or one past the span's last slot, goes to the slow
    // path, which reports it. So does the list's head, freed twice in a
    // row. (The slot index and its product back were two dependent
    // multiplies and a load of the class table: 8 % of larson's time.)
    // Nothing of the object is read: a load that misses there stalled
    // every free (half of larson's free samples), where the push's stores
    // do not. A second free of a slot freed earlier is caught later
    // (free_list.h).
    const uint32_t c = tag & 0xff;
    const ClassCache& cc = h->cache[c];
    const uintptr_t off = (p & (kPageSize - 1)) | uintptr_t{tag >> 8} << kPageShift;
    void* head = cc.head.load(std::memory_order_relaxed);
    if (LIBDUMP_LIKELY(off * cc.multiple_magic <= cc.multiple_magic - 1 && off < cc.span_bytes && ptr != head)) {
      return PushList(h, c, ptr, head);
    }
  }
  FreeUntagged(ptr);
}

// Slot size of the objects of an in-use span.
size_t SlotSize(const Span* s);
// The span's side table of types, created on first use, with slot i marked
// annotated. Called by the thread that holds slot i.
SpanExtra* AnnotateSlot(Span* s, uint32_t i);

// Zeroes the new object p of `size` bytes and types it (type_id 0: plain).
// The caller is inside an allocator section from the allocation on, so that
// a heap dump never sees the slot typed with its previous contents.
void TypeNewObject(void* p, size_t size, uint32_t type_id, uint32_t count);
// A small object of libdump's own, typed type_id, from the own spans
// (central_freelist.h, OwnTake); null when out of memory.
void* AllocateOwnSlot(size_t size, uint32_t type_id);

void* AllocateAlignedImpl(size_t align, size_t size);
void* ReallocateImpl(void* p, size_t size);
size_t UsableSizeImpl(const void* p);

}  // namespace libdump::internal
