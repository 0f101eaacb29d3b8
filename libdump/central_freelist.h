// The central lists: per size class, the spans with free slots and a
// transfer cache of whole batches, under one lock (tcmalloc's central free
// list and transfer cache). A thread's list that empties takes a batch from
// here; one that overflows gives a batch back. A batch the transfer cache
// holds moves in O(1); only a batch that it cannot hold or give goes
// through the spans' bitmaps, whose live bits change here and nowhere else.
//
// Every caller is inside an allocator section and holds the class's lock
// (CentralLock): a stop waits until a batch is on one side or the other,
// and fork's prepare handler takes every class's lock, so neither a stopped
// nor a forked walk finds slots in flight between a thread's list and here.
#pragma once

#include <cstdint>

#include "lock.h"
#include "span.h"

namespace libdump::internal {

SpinLock& CentralLock(int size_class);

// Slots a batch moves: about 16 KiB of them, 2 to 32. A thread's list holds
// at most two batches (ClassCache::max_length), so a thread pins at most
// ~32 KiB a class, and the transfer cache 8 batches a class.
inline uint32_t BatchSlots(uint32_t slot_size) {
  const uint32_t by_bytes = (16u << 10) / slot_size;
  return by_bytes < 2 ? 2 : by_bytes > 32 ? 32 : by_bytes;
}

// Up to n slots of class c, linked through their first words (the last
// one's link null), into *head; how many (0: out of memory). Each has its
// live bit set.
uint32_t CentralTake(int c, uint32_t n, void** head);
// Gives back a chain of n slots of class c, the last one's link null: to
// the transfer cache if it is a whole batch and there is room, else (and
// always with to_spans: a thread's exit, a trim) to their spans.
void CentralGive(int c, void* head, uint32_t n, bool to_spans = false);
// Whether p sits in a batch of class c's transfer cache.
bool InTransferCache(int c, const void* p);
// Calls f(ctx, slot) for every slot in every transfer cache; the caller
// holds every class's lock or has the world stopped.
void ForEachTransferSlot(void (*f)(void* ctx, uintptr_t slot), void* ctx);
// Gives every transfer cache's batches back to their spans (empty spans to
// the page heap): ReleaseFreeMemory.
void DrainTransferCaches();

// libdump's own small objects (own_memory.h) in spans of their own, one
// slot at a time under a lock of their own: none of them shares a page with
// the program's objects, whose pages would otherwise lose their tags for as
// long as a typed own object lives there (allocator.cc, RetagPage). The
// slot comes with its live bit set and its first 16 bytes zero; null when
// out of memory.
void* OwnTake(int c);
// Gives slot p (of an own span of class c; its checks passed) back to its span.
void OwnGive(int c, void* p);

// Hands an empty small span back to the page heap.
void ReleaseSmallSpan(Span* s);

// Every class's lock (the own spans' too), in class order: fork's prepare
// and parent handlers, and a copy of the transfer caches among running
// threads.
void LockCentralLists();
void UnlockCentralLists();
void CentralForkChild();

}  // namespace libdump::internal
