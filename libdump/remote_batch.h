// Remote frees batched per thread. A thread that frees objects of spans it
// does not own keeps, per size class, the freed slots of one bitmap word of
// one span, and publishes them to the span's remote word with a single
// fetch_or when a free names another word (or at thread exit). Frees of a
// producer's objects arrive in the order it allocated them, so most remote
// frees cost a plain store to the freeing thread's own memory instead of
// atomics on a cache line the owner also uses.
//
// The heap walk stays exact: a batched slot is free, so the walk masks it
// out (CollectBatchedFrees in heap_walk.cc). An entry changes only inside an allocator section
// (a stopped thread is never half-way) and under a sequence count (a walk
// of a running program never reads a torn entry). Until published, a batched
// slot stays live in its span, so the span can be neither reused nor
// released: an entry never names a recycled span. A thread that stops
// freeing pins at most one word per class until it exits.
#pragma once

#include <atomic>
#include <cstdint>

#include "fatal.h"
#include "size_class.h"
#include "span.h"

namespace libdump::internal {

struct RemoteBatch {
  std::atomic<Span*> span{nullptr};
  std::atomic<uint32_t> word{0};
  std::atomic<uint64_t> bits{0};  // slots of span->live[word] freed, not yet published
};

struct RemoteBatches {
  RemoteBatch entry[kNumClasses];
  std::atomic<uint32_t> seq{0};  // odd while an entry changes
};

// In a forked child (the allocator's fork handler, for every heap): makes
// the heap's batches readable again.
void RemoteBatchesForkChild(RemoteBatches& b);

// Publishes entry e and makes it hold slots `bits` of word w of span s.
void ReplaceBatch(RemoteBatches& b, RemoteBatch& e, Span* s, uint32_t w, uint64_t bits);

// Frees slot i of a span that the batches' thread does not own. The slot is
// known to be live and a slot start; its annotations are cleared.
inline void BatchRemoteFree(RemoteBatches& b, Span* s, uint32_t i) {
  const uint32_t w = i >> 6;
  const uint64_t m = uint64_t{1} << (i & 63);
  RemoteBatch& e = b.entry[s->size_class];
  const uint64_t bits = e.bits.load(std::memory_order_relaxed);
  if (bits != 0 && e.span.load(std::memory_order_relaxed) == s && e.word.load(std::memory_order_relaxed) == w) {
    if (bits & m) Fatal("double free", reinterpret_cast<void*>(s->SlotAddress(i)));
    // The free: from here the walk masks the slot out.
    e.bits.store(bits | m, std::memory_order_release);
    return;
  }
  ReplaceBatch(b, e, s, w, m);
}

// Publishes every batched free of a thread's batches (thread exit).
void FlushRemoteBatches(RemoteBatches& b);

}  // namespace libdump::internal
