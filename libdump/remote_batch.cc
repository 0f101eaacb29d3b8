#include "remote_batch.h"

#include "lock.h"
#include "span_remote.h"

namespace libdump::internal {

namespace {

// Publishes entry e and leaves it naming (s, w) with `bits`. Callers are
// inside an allocator section and have made the sequence count odd.
void Replace(RemoteBatch& e, Span* s, uint32_t w, uint64_t bits) {
  if (const uint64_t old = e.bits.load(std::memory_order_relaxed)) {
    PublishRemote(e.span.load(std::memory_order_relaxed), e.word.load(std::memory_order_relaxed), old);
  }
  e.span.store(s, std::memory_order_relaxed);
  e.word.store(w, std::memory_order_relaxed);
  e.bits.store(bits, std::memory_order_relaxed);
}

// Seqlock writer side; only the heap's thread writes.
void BeginChange(RemoteBatches& b) {
  b.seq.store(b.seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}
void EndChange(RemoteBatches& b) {
  b.seq.store(b.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

}  // namespace

void ReplaceBatch(RemoteBatches& b, RemoteBatch& e, Span* s, uint32_t w, uint64_t bits) {
  AllocatorSection section;
  BeginChange(b);
  Replace(e, s, w, bits);
  EndChange(b);
}

void FlushRemoteBatches(RemoteBatches& b) {
  AllocatorSection section;
  BeginChange(b);
  for (RemoteBatch& e : b.entry) Replace(e, nullptr, 0, 0);
  EndChange(b);
}

void RemoteBatchesForkChild(RemoteBatches& b) {
  // A thread of the parent that was inside ReplaceBatch at the fork left its
  // sequence count odd for good: the child's dumps would wait on it forever.
  // Its entries may be half-replaced, so they are dropped: the frees they
  // held stay undone (at most a word of slots per class, in a heap whose
  // thread is not in the child) rather than being applied to a wrong span.
  const uint32_t seq = b.seq.load(std::memory_order_relaxed);
  if ((seq & 1) == 0) return;
  for (RemoteBatch& e : b.entry) {
    e.span.store(nullptr, std::memory_order_relaxed);
    e.word.store(0, std::memory_order_relaxed);
    e.bits.store(0, std::memory_order_relaxed);
  }
  b.seq.store(seq + 1, std::memory_order_release);
}

}  // namespace libdump::internal
