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
// countdown picked.
void* AllocateSampled(size_t size, ThreadHeap* h, int c);
// A free of a slot of h's own span that failed a fast-path check: an
// annotated slot (sampled or typed), or misuse.
void FreeOwnedSlow(ThreadHeap* h, Span* s, void* p);

// The top of class c's stack of recent frees (height != 0): the slot this
// thread freed last. Its live bit is still set (recent_frees.h); the pop
// clears the key the free left in it, on the line the caller writes next.
__attribute__((always_inline)) inline void* PopRecent(ThreadHeap* h, ClassCache& cc, int c, uint64_t recent) {
  void* p = reinterpret_cast<void*>(h->recent[c].slot[RecentHeight(recent) - 1].load(std::memory_order_relaxed));
  cc.recent.store(recent - 1, std::memory_order_release);
  ClearStackedKey(p);
  return p;
}
// The lowest slot of the cached bitmap word (free_bits != 0), which this
// thread has reserved: sets its live bit. Only this thread writes its spans'
// live words: a plain read-modify-write. Once the bit is set the walk reports
// the object.
__attribute__((always_inline)) inline void* TakeCachedSlot(ClassCache& cc) {
  const uint64_t bits = cc.free_bits.load(std::memory_order_relaxed);
  const unsigned b = static_cast<unsigned>(__builtin_ctzll(bits));
  cc.free_bits.store(bits & (bits - 1), std::memory_order_relaxed);
  cc.live_word->store(cc.live_word->load(std::memory_order_relaxed) | (uint64_t{1} << b),
                      std::memory_order_relaxed);
  return reinterpret_cast<void*>(cc.word_base + uintptr_t{b} * cc.slot_size);
}

// The end of a local free whose checks passed: onto class c's stack of
// recent frees, or back to the bitmap if the stack is full (always, under
// the debug heap, whose capacity of 0 sends every free to ReturnSlot). Stacked, the slot
// stays live in the bitmap and reserved in `used` (recent_frees.h), so
// neither the span's bits nor its standing change. Release: a walk that
// reads the new height reads the entry below it.
__attribute__((always_inline)) inline void StackSlot(ThreadHeap* h, uint32_t c, void* ptr) {
  ClassCache& cc = h->cache[c];
  const uint64_t recent = cc.recent.load(std::memory_order_relaxed);
  const uint32_t n = RecentHeight(recent);
  if (LIBDUMP_LIKELY(n < cc.recent_depth)) {
    h->recent[c].slot[n].store(reinterpret_cast<uintptr_t>(ptr), std::memory_order_relaxed);
    *static_cast<uint64_t*>(ptr) = g_stacked_key;
    cc.recent.store(recent + kRecentPush, std::memory_order_release);
    return;
  }
  ReturnSlot(h, ptr);
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
    // every malloc goes that way, to DebugAllocate.) Recent frees before the bitmap
    // word: churn then never reaches the sparse words.
    const int64_t left = h->sample_left - cc.slot_size;
    if (LIBDUMP_UNLIKELY(left < 0)) return AllocateSampled(size, h, c);
    const uint64_t recent = cc.recent.load(std::memory_order_relaxed);
    if (LIBDUMP_LIKELY(RecentHeight(recent) != 0 || cc.free_bits.load(std::memory_order_relaxed) != 0)) {
      h->sample_left = left;
      return RecentHeight(recent) != 0 ? PopRecent(h, cc, c, recent) : TakeCachedSlot(cc);
    }
  }
  return AllocateSlow(size);
}

__attribute__((always_inline)) inline void FreeFast(void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  Span* s = g_page_map.Get(p);
  ThreadHeap* h = t_heap;
  if (LIBDUMP_UNLIKELY(s == nullptr || h == nullptr)) return FreeSlow(ptr, s);
  const ThreadHeap* owner = s->owner.load(std::memory_order_relaxed);
  // A small span of another thread (or of none): a remote free.
  if (owner != h && s->state == SpanState::kSmall) return FreeNotOwned(h, s, ptr);
  // Owned by this thread implies a small span.
  if (LIBDUMP_LIKELY(owner == h)) {
    const uint32_t i = s->SlotIndex(p);
    const uint64_t m = uint64_t{1} << (i & 63);
    std::atomic<uint64_t>& w = s->bits[i >> 6].live;
    // Misuse checks cost a multiply and loads from lines the free reads
    // anyway: an interior pointer or a slot not live go to the slow path,
    // which reports them. So do frees of annotated slots, whose type or
    // sample record must be cleared, and frees into a span with remote frees
    // pending (Span::remote_pending): the slow path folds those in first
    // (CollectOwnRemote), which also tells a slot freed remotely already, so
    // that this path never reads the remote words, on a line other threads
    // write.
    const uint64_t busy = s->bits[i >> 6].annotated.load(std::memory_order_relaxed);
    const uint32_t pending = s->remote_pending.load(std::memory_order_relaxed);
    const uint64_t v = w.load(std::memory_order_relaxed);
    if (LIBDUMP_LIKELY(s->SlotAddress(i) == p && (v & m) != 0 && ((busy & m) | pending) == 0)) {
      // A live bit is also set for a slot already on the stack: its key sends
      // a second free to the slow path, which searches the stack. The read
      // fetches the line that the next malloc's caller writes.
      if (LIBDUMP_UNLIKELY(HasStackedKey(ptr))) return FreeOwnedSlow(h, s, ptr);
      return StackSlot(h, s->size_class, ptr);
    }
    return FreeOwnedSlow(h, s, ptr);
  }
  FreeSlow(ptr, s);
}


// Slot size of the objects of an in-use span.
size_t SlotSize(const Span* s);
// The span's side table of types, created on first use, with slot i marked
// annotated. Only the owner of the small span calls it.
SpanExtra* AnnotateSlot(Span* s, uint32_t i);

void* AllocateAlignedImpl(size_t align, size_t size);
void* ReallocateImpl(void* p, size_t size);
size_t UsableSizeImpl(const void* p);

}  // namespace libdump::internal
