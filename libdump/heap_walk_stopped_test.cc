// The walk as WriteHeapDump will run it: every other thread stopped by
// libdump::capture, with the allocator's section marker as the stop gate.
// Threads record what they hold; with the world stopped the walk must match
// the records exactly, up to the one object a thread may have in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "testing/churning_threads_testutil.h"

namespace libdump {
namespace {

constexpr size_t kMarker = 2000;  // 2048-byte slots: only this test's objects

TEST(HeapWalkStopped, WalkMatchesWhatStoppedThreadsHold) {
  // Other sizes, large spans included, keep the page heap busy.
  testing::ChurningThreads churn(
      4, [] { return Allocate(kMarker); },
      [](std::mt19937& rng) -> size_t { return rng() % 64 == 0 ? 100000 : rng() % 1000; });
  std::vector<uintptr_t> seen, held;
  seen.reserve(1 << 16);
  for (int round = 0; round < 50; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto walk = [&] {
      seen.clear();
      internal::ForEachObject(
          [](const ObjectInfo& o, void* c) {
            if (o.size == 2048) static_cast<std::vector<uintptr_t>*>(c)->push_back(o.addr);
          },
          &seen);
    };
    ASSERT_TRUE(churn.WhileStopped(walk, held));
    ASSERT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    std::vector<uintptr_t> missing, extra;
    std::set_difference(held.begin(), held.end(), seen.begin(), seen.end(), std::back_inserter(missing));
    std::set_difference(seen.begin(), seen.end(), held.begin(), held.end(), std::back_inserter(extra));
    // A held object is live: the walk must report it.
    EXPECT_TRUE(missing.empty()) << missing.size() << " held objects missing in round " << round;
    // Each thread may be stopped between malloc returning and recording, or
    // between unrecording and free: at most one unrecorded object each.
    EXPECT_LE(extra.size(), churn.size()) << "round " << round;
  }
}

}  // namespace
}  // namespace libdump
