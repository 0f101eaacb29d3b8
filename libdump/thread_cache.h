// Per-thread heaps: each thread owns spans, one current span per size class,
// and allocates from its recently freed slots (recent_frees.h), else from a
// cached word of the current span's free bitmap. The owner alone writes its
// spans' live bits, so the fast paths need no atomic read-modify-write;
// other threads free by setting remote bits (see span.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.h"
#include "large_cache.h"
#include "recent_frees.h"
#include "remote_batch.h"
#include "span_remote.h"
#include "size_class.h"
#include "span.h"

namespace libdump::internal {

// The fast paths count nothing of their own: the counts statistics need
// (ClassMallocs, ClassFrees) follow from the fields they write anyway, so a
// malloc and a free cost no counter update each (4% of larson's time).
struct alignas(64) ClassCache {
  // Slots of the current word reserved for this thread. Atomic (relaxed, as
  // cheap as plain) only so that statistics may read it from another thread.
  std::atomic<uint64_t> free_bits{0};
  uintptr_t word_base = 0;  // address of the current word's slot 0
  std::atomic<uint64_t>* live_word = nullptr;  // the current word's live bits
  Span* span = nullptr;  // the current span (its list is kCurrent)
  uint32_t slot_size = 0;
  uint32_t recent_depth = 0;  // capacity (RecentDepth) of the stack of recent frees
  // That stack (slots in ThreadHeap::recent): its height in the low
  // kRecentHeightBits, the number of pushes ever made above them. A push adds
  // kRecentPush, a pop subtracts 1: the count of pushes rides on the store
  // that moves the height.
  std::atomic<uint64_t> recent{0};
  // Mallocs other than pops: each word's slots are counted when the word is
  // reserved, and those still in free_bits are subtracted on reading.
  // Stacked slots dropped at thread exit are subtracted here too (pushes
  // never popped).
  std::atomic<uint64_t> mallocs_base{0};
  std::atomic<uint64_t> frees{0};  // frees that bypass the stack, local or remote
};
static_assert(sizeof(ClassCache) == 64, "both fast paths read one line of a class's cache");

inline constexpr unsigned kRecentHeightBits = 6;
inline constexpr uint64_t kRecentPush = (uint64_t{1} << kRecentHeightBits) + 1;
static_assert(kRecentDepth < (1u << kRecentHeightBits), "a stack's height fits its bits");
inline uint32_t RecentHeight(uint64_t recent) {
  return static_cast<uint32_t>(recent & ((uint64_t{1} << kRecentHeightBits) - 1));
}
// Cumulative counts of one class's cache; exact while its thread is quiet.
inline uint64_t ClassMallocs(const ClassCache& cc) {
  const uint64_t r = cc.recent.load(std::memory_order_relaxed);
  const uint64_t pops = (r >> kRecentHeightBits) - RecentHeight(r);
  return cc.mallocs_base.load(std::memory_order_relaxed) -
         CountBits(cc.free_bits.load(std::memory_order_relaxed)) + pops;
}
inline uint64_t ClassFrees(const ClassCache& cc) {
  return (cc.recent.load(std::memory_order_relaxed) >> kRecentHeightBits) +
         cc.frees.load(std::memory_order_relaxed);
}

struct ThreadHeap {
  ClassCache cache[kNumClasses];
  // Bytes left before the next sampled allocation. Charged in slot bytes on
  // the fast path; INT64_MAX while sampling is off.
  int64_t sample_left = INT64_MAX;
  // xorshift state for the sampling distances: per thread, so that a sample
  // costs no atomic on a line every sampling thread writes.
  uint64_t sample_rng = 0;
  SpanQueue partial[kNumClasses];
  SpanQueue full[kNumClasses];
  // Remote frees into this heap's spans since it last swept its full lists.
  std::atomic<uint32_t> remote_hint[kNumClasses] = {};
  // This thread's frees of other heaps' objects, not yet published.
  RemoteBatches batches;
  std::atomic<uint64_t> large_mallocs{0};
  std::atomic<uint64_t> large_frees{0};
  std::atomic<uint64_t> large_bytes_allocated{0};
  std::atomic<uint64_t> large_bytes_freed{0};
  ThreadHeap* next_all = nullptr;   // registry of every heap ever made
  ThreadHeap* next_free = nullptr;  // pool of heaps without a thread
  // Each class's stack of recent frees (recent_frees.h): 20.5 KiB, apart
  // from the caches and without an initializer, so that a heap is made with
  // default-initialization and a row's pages become resident only when its
  // class frees. A thread that uses a few classes keeps a few pages; in the
  // ClassCaches, each row would put a page under every eight classes.
  RecentRow recent[kNumClasses];
  // Freed large spans of up to 64 KiB, for this thread's next large mallocs.
  // Last, so that the fields above keep the offsets the fast paths were
  // measured with (placed before `recent`, it cost churn 3 % more L1 write
  // misses).
  LargeCache large_cache;
  // The debug heap's (debug_heap.h), last like the large-span cache: the
  // sampling countdown itself (sample_left then stays negative, so that
  // malloc never takes its fast path), and each full stack's next slot to
  // evict.
  int64_t debug_sample_left = INT64_MAX;
  uint8_t debug_evict[kNumClasses] = {};
};

// This thread's heap, or null before its first allocation and after exit.
// constinit: without it every access calls a TLS wrapper function first.
extern constinit thread_local ThreadHeap* t_heap __attribute__((tls_model("initial-exec")));

// Returns the calling thread's heap, creating the allocator and the heap on
// first use. Never null (aborts when out of memory for metadata).
ThreadHeap* AttachHeap();
// Gives the heap's spans back (empty ones to the page heap, others to the
// orphan lists) and the heap to the pool. Called at thread exit.
void DetachHeap(ThreadHeap* h);

// Makes cc.free_bits non-zero, finding a new word or span. False when out of
// memory. Called only when the class's stack of recent frees is empty.
bool Refill(ThreadHeap* h, int size_class);

// Frees a small-span slot owned by h / owned by another heap or no heap.
// The slot is known to be a slot start.
void LocalFree(ThreadHeap* h, Span* s, uint32_t index);
// The first half of a local free: a sampled slot is reported to the
// profiler, and its annotations are cleared; the slot stays live. False
// (and nothing done) if the slot is not live or was freed remotely already.
bool PrepareLocalFree(Span* s, uint32_t index);
// A local free of p (its checks passed) that its class's full stack cannot
// take: clears the slot's live bit, the slot leaves `used`, and its span may
// change lists or go back. It finds the span again, so that FreeFast need
// not keep it.
void ReturnSlot(ThreadHeap* h, void* p);
// ReturnSlot's work without the debug heap's detour: for a slot leaving the
// debug heap's quarantine.
void UnstackSlot(ThreadHeap* h, void* p);
void RemoteFree(ThreadHeap* h, Span* s, uint32_t index);
// Frees ptr, in small span s that h (not null) does not own; h takes s over
// if it is an orphan of a class h allocates (see FreeNotOwned).
void FreeNotOwned(ThreadHeap* h, Span* s, void* ptr);
// Folds the remote frees pending in h's span s into its live bits, and
// moves it off the full list if that freed enough of it. For a local free
// into s, whose slot keeps s from emptying.
void CollectOwnRemote(ThreadHeap* h, Span* s);
// Lists a span h has just taken over where its standing puts it.
void File(ThreadHeap* h, Span* s);

// Every heap ever created (for statistics), newest first.
ThreadHeap* AllHeaps();

// Fork support: the heap registry lock.
void HeapsForkPrepare();
void HeapsForkParent();
void HeapsForkChild();

}  // namespace libdump::internal
