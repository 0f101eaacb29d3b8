// Release of idle free pages without allocation activity.
//
// The page heap's decay runs when Alloc and Free tick its clock (page_heap.h),
// so a program that stops allocating keeps committed whatever it freed last,
// up to the hard cap: jemalloc and mimalloc behave the same way without a
// background thread. SetBackgroundRelease(true) starts a thread, as jemalloc's
// background_thread option does, that ticks the clock once per decay epoch;
// ReleaseFreeMemory and malloc_trim release everything at once.
#pragma once

#include <cstdint>

namespace libdump::internal {

// Releases committed free pages until at most `keep` bytes remain (what can
// go: see PageHeap::ReleaseDownTo). Returns the bytes released.
uint64_t ReleaseFreeMemoryDownTo(uint64_t keep);

}  // namespace libdump::internal
