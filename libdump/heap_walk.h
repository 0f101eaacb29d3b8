// What WriteHeapDump needs from the allocator while the world is stopped.
#pragma once

#include <atomic>
#include <cstdint>

#include "libdump/heap.h"
#include "lock.h"
#include "cached_slots.h"

namespace libdump::internal {

// Visits every live object in address order. Takes no lock and allocates
// nothing from the heap: call it only while every other thread is stopped
// outside the allocator (see InAllocator), or in a single-threaded process.
// cached: the slots cached outside the central lists, taken after the stop.
void ForEachObject(const CachedSlots& cached, ObjectVisitor visit, void* context);
void ForEachObject(ObjectVisitor visit, void* context);
// FindObject, with the cached slots taken after the stop.
bool FindObject(const CachedSlots& cached, const void* addr, ObjectInfo* out);

// Async-signal-safe: whether the calling thread is inside an allocator
// critical section (holds or may take an allocator lock, or is changing span
// layout). A stop-the-world handler that sees true must defer the stop until
// the section ends, where the hook of SetSectionExitHook (allocator_hooks.h)
// is called.
inline bool InAllocator() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return t_allocator_depth > 0;
}
// The kept token of live sampled object p, or 0.
uintptr_t SampleTokenOf(const void* p);
// Calls visit for every live sampled object whose token the allocator keeps.
// Takes the page heap lock only between visits (visit may allocate), so it
// is safe with the world running or stopped by WriteHeapDump; with writers
// running, objects allocated or freed during the call may or may not be
// visited.
void ForEachKeptSampleToken(void (*visit)(void* ctx, uintptr_t addr, size_t size, uintptr_t token), void* ctx);

}  // namespace libdump::internal
