#include "background_release.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "libdump/heap.h"
#include "page_heap.h"

namespace libdump {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// 40 MiB freed in 4 MiB blocks: under the hard cap, so the page heap keeps it
// committed and only the decay gives it back.
void FreeFortyMiB() {
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) {
    blocks.push_back(Allocate(4 * kMiB));
    static_cast<char*>(blocks.back())[0] = 1;
  }
  for (void* p : blocks) Free(p);
}

uint64_t FreeCommitted() { return GetHeapStats().bytes_free_committed; }

// A release moves free bytes from committed to returned, 2 MiB at a time;
// a reader meanwhile must never see them gone from both. Before, the span
// being released left both counts for the whole of its madvise calls, and
// the test below once read 0 bytes returned with all 40 MiB in flight.
TEST(BackgroundRelease, AReleaseInProgressKeepsItsBytesInTheStatistics) {
  SetHugePages(HugePages::kOff);
  ReleaseFreeMemory();
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) {
    blocks.push_back(Allocate(4 * kMiB));
    memset(blocks.back(), 1, 4 * kMiB);  // so that each madvise has pages to drop
  }
  for (void* p : blocks) Free(p);
  const HeapStats before = GetHeapStats();
  const uint64_t free_bytes = before.bytes_free_committed + before.bytes_returned;
  ASSERT_GE(before.bytes_free_committed, 40 * kMiB);

  std::atomic<bool> done{false};
  std::thread releaser([&] {
    ReleaseFreeMemory();
    done.store(true, std::memory_order_release);
  });
  uint64_t lowest = free_bytes;
  while (!done.load(std::memory_order_acquire)) {
    const HeapStats st = GetHeapStats();
    lowest = std::min<uint64_t>(lowest, st.bytes_free_committed + st.bytes_returned);
  }
  releaser.join();
  EXPECT_GE(lowest, free_bytes);
  const HeapStats after = GetHeapStats();
  EXPECT_EQ(after.bytes_free_committed + after.bytes_returned, free_bytes);
  EXPECT_LE(after.bytes_free_committed, before.bytes_free_committed - 40 * kMiB);
}

// One test, in order: the decay needs allocation activity without the thread,
// and a process-wide thread cannot be un-started for another test.
TEST(BackgroundRelease, IdleFreePagesGoOnlyWithTheThread) {
  SetHugePages(HugePages::kOff);  // released page by page, never held by a region in use
  ReleaseFreeMemory();
  FreeFortyMiB();
  const uint64_t freed = FreeCommitted();
  ASSERT_GE(freed, 40 * kMiB);

  // Idle, no thread: five decay epochs pass and nothing is released.
  std::this_thread::sleep_for(std::chrono::nanoseconds(5 * internal::PageHeap::kDecayEpochNs));
  EXPECT_EQ(FreeCommitted(), freed);

  // With the thread, half of what stayed idle goes per epoch: from 40 MiB
  // the decay floor (2 MiB) is reached after about five epochs (0.5 s). Ten
  // seconds is the bound for a loaded machine, not the expectation.
  ASSERT_TRUE(SetBackgroundRelease(true));
  const auto start = std::chrono::steady_clock::now();
  while (FreeCommitted() > internal::PageHeap::kDecayFloorBytes &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(FreeCommitted(), internal::PageHeap::kDecayFloorBytes);
  EXPECT_GE(GetHeapStats().bytes_returned, 38 * kMiB);
  SetBackgroundRelease(false);

  // ReleaseFreeMemory: everything at once, and it says how much.
  FreeFortyMiB();
  const uint64_t kept = FreeCommitted();
  const uint64_t released = ReleaseFreeMemory();
  EXPECT_GE(released, 40 * kMiB);
  EXPECT_EQ(FreeCommitted(), kept - released);
  EXPECT_EQ(ReleaseFreeMemory(), 0u);
}

}  // namespace
}  // namespace libdump
