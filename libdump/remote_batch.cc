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

}  // namespace libdump::internal
