// What WriteHeapDump needs from the allocator while the world is stopped.
#pragma once

#include <cstdint>

#include "libdump/heap.h"
#include "lock.h"

namespace libdump::internal {

// Visits every live object in address order. Takes no lock and allocates
// nothing: call it only while every other thread is stopped outside the
// allocator (see InAllocator), or in a single-threaded process.
void ForEachObject(ObjectVisitor visit, void* context);

// Async-signal-safe: whether the calling thread is inside an allocator
// critical section (holds or may take an allocator lock, or is changing span
// layout). A stop-the-world handler that sees true must defer the stop until
// the section ends, where the hook installed below is called.
inline bool InAllocator() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return t_allocator_depth > 0;
}
// hook runs on a thread each time it leaves its outermost allocator section.
void SetSectionExitHook(void (*hook)());

// Called after a sampled object is allocated and before it is freed.
// Must not allocate from this heap. Null by default.
using SampleHook = void (*)(void* p, size_t size, bool allocated);
void SetSampleHook(SampleHook hook);

// Called when a request fails because the system gives no more memory (an
// arena cannot be mapped), once per failing request, on the requesting
// thread, before malloc returns null or operator new throws. It runs outside
// every allocator lock and section, so it may stop the world and walk the
// heap. A failure inside the hook does not call it again. Null by default.
void SetOutOfMemoryHook(void (*hook)(size_t requested));

}  // namespace libdump::internal
