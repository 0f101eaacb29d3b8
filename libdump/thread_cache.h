// Per-thread caches of free slots, one plain free list per size class
// (free_list.h), as tcmalloc's thread caches: malloc pops, free pushes,
// whichever thread allocated the slot. A list longer than its class's
// max_length gives a batch back to the central list (central_freelist.h);
// an empty one takes a batch from it. No span belongs to a thread, so a free
// by another thread is the same push as a local one.
//
// What the walk needs to be exact is kept off these paths: a slot on a list
// keeps its live bit, and the walk subtracts every list's slots, following
// them with the world stopped (cached_slots.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.h"
#include "free_list.h"
#include "large_cache.h"
#include "size_class.h"
#include "span.h"

namespace libdump::internal {

// `list` holds the list's length in its low kLengthBits and the number of
// pushes ever made above them: a push adds kPush, a pop subtracts 1, so the
// count of frees rides on the store that moves the length, and the fast
// paths update no counter of their own.
inline constexpr unsigned kLengthBits = 16;
inline constexpr uint64_t kPush = (uint64_t{1} << kLengthBits) + 1;
inline uint32_t ListLength(uint64_t list) { return static_cast<uint32_t>(list & ((uint64_t{1} << kLengthBits) - 1)); }

struct alignas(64) ClassCache {
  // Atomic (relaxed: plain moves) only so that a walk of a stopped world and
  // the statistics may read them from another thread.
  std::atomic<void*> head{nullptr};
  std::atomic<uint64_t> list{0};
  uint32_t max_length = 0;  // a push past it gives a batch back (0: every free goes out of line)
  uint32_t batch = 0;       // slots per transfer to and from the central list
  uint32_t slot_size = 0;
  // The class's span_bytes and multiple_magic (size_class.h), here so that
  // the free's interior-pointer test reads the line it pushes on.
  uint32_t span_bytes = 0;
  uint64_t multiple_magic = 0;
  // The debug heap's quarantine of this class (debug_heap.h): its slots.
  std::atomic<uint32_t> quarantined{0};
  std::atomic<uint64_t> fetched{0};   // slots taken from the central list
  std::atomic<uint64_t> returned{0};  // slots given back to it
};
static_assert(sizeof(ClassCache) == 64, "both fast paths read one line of a class's cache");

// Cumulative counts of one class's cache; exact while its thread is quiet.
// Every slot enters the list by a fetch or a push and leaves it by a pop or
// a return (or, under the debug heap, waits in the quarantine).
inline uint64_t ClassFrees(const ClassCache& cc) { return cc.list.load(std::memory_order_relaxed) >> kLengthBits; }
inline uint64_t ClassMallocs(const ClassCache& cc) {
  const uint64_t l = cc.list.load(std::memory_order_relaxed);
  return cc.fetched.load(std::memory_order_relaxed) + (l >> kLengthBits) - cc.returned.load(std::memory_order_relaxed) -
         ListLength(l) - cc.quarantined.load(std::memory_order_relaxed);
}

// The debug heap's quarantine of a class: a ring of freed slots that malloc
// does not hand out (debug_heap.h).
inline constexpr uint32_t kQuarantineDepth = 40;
inline constexpr uint32_t kQuarantineBytes = 32 * 1024;
inline uint32_t QuarantineDepth(uint32_t slot_size) {
  const uint32_t by_bytes = kQuarantineBytes / slot_size;
  return by_bytes < 1 ? 1 : by_bytes < kQuarantineDepth ? by_bytes : kQuarantineDepth;
}
struct QuarantineRow {
  std::atomic<uintptr_t> slot[kQuarantineDepth];
};

struct ThreadHeap {
  ClassCache cache[kNumClasses];
  // Bytes left before the next sampled allocation. Charged in slot bytes on
  // the fast path; INT64_MAX while sampling is off.
  int64_t sample_left = INT64_MAX;
  // xorshift state for the sampling distances: per thread, so that a sample
  // costs no atomic on a line every sampling thread writes.
  uint64_t sample_rng = 0;
  std::atomic<uint64_t> large_mallocs{0};
  std::atomic<uint64_t> large_frees{0};
  std::atomic<uint64_t> large_bytes_allocated{0};
  std::atomic<uint64_t> large_bytes_freed{0};
  ThreadHeap* next_all = nullptr;   // registry of every heap ever made
  ThreadHeap* next_free = nullptr;  // pool of heaps without a thread
  // Freed large spans of up to 64 KiB, for this thread's next large mallocs.
  LargeCache large_cache;
  // The debug heap's (debug_heap.h): the sampling countdown itself
  // (sample_left then stays negative, so that malloc never takes its fast
  // path), each ring's next slot to evict, and the rings, last and without
  // an initializer, so that their pages stay untouched without it.
  int64_t debug_sample_left = INT64_MAX;
  uint8_t debug_evict[kNumClasses] = {};
  QuarantineRow quarantine[kNumClasses];
};

// This thread's heap, or null before its first allocation and after exit.
// constinit: without it every access calls a TLS wrapper function first.
extern constinit thread_local ThreadHeap* t_heap __attribute__((tls_model("initial-exec")));

// Returns the calling thread's heap, creating the allocator and the heap on
// first use. Never null (aborts when out of memory for metadata).
ThreadHeap* AttachHeap();
// Gives every list's slots back to the central lists and the heap to the
// pool. Called at thread exit.
void DetachHeap(ThreadHeap* h);
// Whether this thread's heap was detached (its exit has begun).
bool HeapDetached();
// Gives every list's slots back (ReleaseFreeMemory, malloc_trim).
void FlushLists(ThreadHeap* h);

// Fills class c's empty list with a batch from the central list; false when
// out of memory.
bool RefillList(ThreadHeap* h, int c);
// A push took class c's list past max_length: a batch goes back.
void ShrinkList(ThreadHeap* h, int c);
// Whether slot p is on h's list of class c. Exact on h's own thread.
bool OnList(const ThreadHeap* h, int c, const void* p);

// Every heap ever created (for statistics and the walk), newest first.
ThreadHeap* AllHeaps();

// Fork support: the heap registry lock.
void HeapsForkPrepare();
void HeapsForkParent();
void HeapsForkChild();

}  // namespace libdump::internal
