// A per-class stack of the slots this thread freed most recently, which
// malloc hands out again before touching the bitmap word.
//
// Why: with random frees a span's bitmap words end up sparse, so allocating
// from them costs a refill every few mallocs, and frees that change a span's
// standing (Span::slow_at) take the slow path; both were the mispredicted
// branches of a churning workload. A stack serves the churn from slots this
// thread just freed, LIFO like a free list, with its links outside the objects.
//
// A stacked slot keeps its live bit, so neither a free that stacks it nor
// the malloc that pops it writes the span's bitmap: the bitmap line the pop
// would read is one the program has not touched since the free, and setting
// the bit there was ~44 % of larson's malloc (docs/ALLOCATOR.md).
// What tells a stacked slot from a live one instead:
// - the stacks themselves, which the walk and FindObject subtract
//   (stacked_slots.h) as they subtract remote frees;
// - a key in the slot's first word, written when it is stacked and cleared
//   when it is popped (the caller is about to write that line anyway). A free
//   that finds the key searches its class's stack, which catches a second
//   free exactly, unless the program wrote the freed object in between; a
//   remote free that finds it ends the process (glibc's tcache checks its
//   key the same way). Without it a second free would stack a slot twice and
//   malloc would hand it out twice.
// Like the slots of the cached word, a stacked slot counts as reserved in
// its span's `used`, so the span is neither released nor handed to another
// heap while the stack names it. Malloc pops the stack before it looks at
// the bitmap, so a refill runs only with the class's stack empty.
#pragma once

#include <atomic>
#include <cstdint>

#include "config.h"

namespace libdump::internal {

// The key, odd and random per process (set before the first heap exists):
// a live object holds it only if the program copied it out of a freed one.
extern LIBDUMP_HIDDEN uint64_t g_stacked_key;
inline bool HasStackedKey(const void* slot) { return *static_cast<const uint64_t*>(slot) == g_stacked_key; }
inline void ClearStackedKey(void* slot) { *static_cast<uint64_t*>(slot) = 0; }

// Slots of small classes are cheap to hold; bigger ones hold at most this many
// bytes per class, so that a thread pins few spans of a class it stops using.
// 40: a row of 40 fits in 512 bytes, and both fast paths index the rows with
// a shift instead of a three-instruction multiply.
inline constexpr uint32_t kRecentDepth = 40;
inline constexpr uint32_t kRecentBytes = 32 * 1024;

inline uint32_t RecentDepth(uint32_t slot_size) {
  const uint32_t by_bytes = kRecentBytes / slot_size;
  return by_bytes < 1 ? 1 : by_bytes < kRecentDepth ? by_bytes : kRecentDepth;
}

// One class's stack; its height and capacity are in the class's ClassCache,
// on the line both fast paths read anyway. No initializers: a row's memory is
// first written by its class's first free (see ThreadHeap::recent).
// Atomic (relaxed stores, as cheap as plain ones) only so that a walk may read
// another thread's stack while it runs.
struct RecentRow {
  std::atomic<uintptr_t> slot[kRecentDepth];
  char pad[512 - kRecentDepth * sizeof(uintptr_t)];
};
static_assert(sizeof(RecentRow) == 512, "the fast paths index the rows with a shift");

}  // namespace libdump::internal
