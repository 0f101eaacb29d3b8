// A per-class stack of the slots this thread freed most recently, which
// malloc hands out again before touching the bitmap word.
//
// Why: with random frees a span's bitmap words end up sparse, so allocating
// from them costs a refill every few mallocs, and frees that change a span's
// standing (Span::slow_at) take the slow path; both were the mispredicted
// branches of a churning workload. A stack serves the churn from slots this
// thread just freed, LIFO like a free list, without writing into free memory.
//
// The bitmap stays the truth: a stacked slot's live bit is clear, so the walk
// never reports it, and a second free of it is caught as a double free. Like
// the slots of the cached word, a stacked slot counts as reserved in its
// span's `used`, so the span is neither released nor handed to another heap
// while the stack names it. Malloc pops the stack before it looks at the
// bitmap, so a refill runs only with the class's stack empty and never
// reserves a stacked slot a second time.
#pragma once

#include <atomic>
#include <cstdint>

namespace libdump::internal {

// 16 bytes, two stores per free: the slot's bit index rides in the top bits
// of its live word's address (metadata addresses are below 2^57 even with
// 5-level paging).
struct RecentFree {
  uintptr_t addr;
  uint64_t word_and_bit;  // the slot's word in Span::bits | bit index << kRecentBitShift

  static constexpr unsigned kRecentBitShift = 58;
  static uint64_t Pack(std::atomic<uint64_t>* word, uint32_t index) {
    return reinterpret_cast<uintptr_t>(word) | (uint64_t{index & 63} << kRecentBitShift);
  }
  std::atomic<uint64_t>* word() const {
    return reinterpret_cast<std::atomic<uint64_t>*>(word_and_bit & ((uint64_t{1} << kRecentBitShift) - 1));
  }
  uint64_t bit() const { return uint64_t{1} << (word_and_bit >> kRecentBitShift); }
};

// Slots of small classes are cheap to hold; bigger ones hold at most this many
// bytes per class, so that a thread pins few spans of a class it stops using.
// 40: a row of 40 fits in 1 KiB, and both fast paths index the rows with a
// shift instead of a three-instruction multiply.
inline constexpr uint32_t kRecentDepth = 40;
inline constexpr uint32_t kRecentBytes = 32 * 1024;

inline uint32_t RecentDepth(uint32_t slot_size) {
  const uint32_t by_bytes = kRecentBytes / slot_size;
  return by_bytes < 1 ? 1 : by_bytes < kRecentDepth ? by_bytes : kRecentDepth;
}

// One class's stack; its height and capacity are in the class's ClassCache,
// on the line both fast paths read anyway. No initializers: a row's memory is
// first written by its class's first free (see ThreadHeap::recent).
struct RecentRow {
  RecentFree slot[kRecentDepth];
  char pad[1024 - kRecentDepth * sizeof(RecentFree)];
};
static_assert(sizeof(RecentRow) == 1024, "the fast paths index the rows with a shift");

}  // namespace libdump::internal
