// What WriteHeapDump needs from the allocator while the world is stopped.
#pragma once

#include <atomic>
#include <cstdint>

#include "libdump/heap.h"
#include "lock.h"
#include "stacked_slots.h"

namespace libdump::internal {

// Visits every live object in address order. Takes no lock and allocates
// nothing from the heap: call it only while every other thread is stopped
// outside the allocator (see InAllocator), or in a single-threaded process.
// stacked: the threads' stacks of recent frees, taken after the stop.
void ForEachObject(const StackedSlots& stacked, ObjectVisitor visit, void* context);
void ForEachObject(ObjectVisitor visit, void* context);
// FindObject, with the stacks taken after the stop.
bool FindObject(const StackedSlots& stacked, const void* addr, ObjectInfo* out);

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

// The heap profiler's side of sampling. Neither hook may allocate from this
// heap. Unset (null) by default.
struct SampleHooks {
  // After a sampled object is allocated. Returns the object's token: the
  // address of the std::atomic<uint64_t> that counts the frees of its
  // bucket, never null. keeps_token: the allocator keeps the token (one per
  // span, beside the span's sampled bits) and, when the object is freed,
  // adds 1 to the counter itself (release), without calling the profiler: a
  // call into another library at every sampled free cost more than the add.
  // Otherwise the profiler must find the object itself at `freed`.
  uintptr_t (*allocated)(void* p, size_t size, bool keeps_token);
  // Before a sampled object whose token the allocator did not keep is freed.
  void (*freed)(void* p, size_t size);
};
void SetSampleHooks(const SampleHooks* hooks);
// The free of a sample whose token was kept, counted as SampleHooks says.
inline void CountKeptSampleFree(uintptr_t token) {
  reinterpret_cast<std::atomic<uint64_t>*>(token)->fetch_add(1, std::memory_order_release);
}

// The kept token of live sampled object p, or 0.
uintptr_t SampleTokenOf(const void* p);
// Calls visit for every live sampled object whose token the allocator keeps.
// Takes the page heap lock only between visits (visit may allocate), so it
// is safe with the world running or stopped by WriteHeapDump; with writers
// running, objects allocated or freed during the call may or may not be
// visited.
void ForEachKeptSampleToken(void (*visit)(void* ctx, uintptr_t addr, size_t size, uintptr_t token), void* ctx);

// Called when a request fails because the system gives no more memory (an
// arena cannot be mapped), once per failing request, on the requesting
// thread, before malloc returns null or operator new throws. It runs outside
// every allocator lock and section, so it may stop the world and walk the
// heap. A failure inside the hook does not call it again. Null by default.
void SetOutOfMemoryHook(void (*hook)(size_t requested));

}  // namespace libdump::internal
