// The allocator-wide state the thread caches call into: initialization, the
// sampling countdown of a new heap, sampled and heapless frees. Defined in
// allocator.cc; declared here, below the thread caches, so that
// thread_cache.cc needs nothing of the allocator's fast paths.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::internal {

struct Span;
struct ThreadHeap;

void EnsureInitialized();
void OnHeapAttached(ThreadHeap* h);
int64_t FirstSampleCountdown(ThreadHeap* h);
// Before a sampled object is freed: counts the free through its kept token
// (if slot, its slot index + 1, is the span's kept one) and empties the
// place, or else tells the profiler.
void NotifySampledFree(Span* s, uint32_t slot, void* p, size_t size);
void CountHeaplessFree(size_t bytes);

uint64_t HeaplessFrees();
uint64_t HeaplessFreeBytes();

}  // namespace libdump::internal
