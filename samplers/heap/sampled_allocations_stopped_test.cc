// ForEachSampledAllocation as WriteHeapDump calls it: every other thread
// stopped by libdump::capture, with the allocator's section marker as the
// stop gate. Sampling every allocation, threads are often stopped inside the
// profiler's hook, which runs outside allocator sections and so may hold the
// bucket table's lock: a reader that took that lock would hang here.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "testing/churning_threads_testutil.h"
#include "libdump/profiler.h"

namespace libdump {
namespace {

constexpr size_t kMarker = 2000;  // 2048-byte slots: only this test's objects

__attribute__((noipa)) void* AllocateMarker() {
  void* p = Allocate(kMarker);
  asm volatile("" ::: "memory");  // not a tail call: its return address is in here
  return p;
}

struct Seen {
  std::vector<uintptr_t> addrs;
  size_t marker_slot = 0;
  size_t with_caller = 0;  // stacks that contain a return address into AllocateMarker
};

void Visit(void* ctx, uintptr_t addr, size_t size, const uintptr_t* pcs, size_t npcs) {
  auto* s = static_cast<Seen*>(ctx);
  if (size != s->marker_slot) return;
  s->addrs.push_back(addr);
  const uintptr_t fn = reinterpret_cast<uintptr_t>(&AllocateMarker);
  for (size_t i = 0; i < npcs; ++i) {
    // The call to Allocate is a few instructions into the function.
    if (pcs[i] > fn && pcs[i] < fn + 256) {
      ++s->with_caller;
      break;
    }
  }
}

TEST(SampledAllocationsStopped, VisitsWhatStoppedThreadsHold) {
  SetMemProfileRate(1);
  ASSERT_TRUE(InstallHeapProfiler());
  Seen seen;
  {
    void* p = Allocate(kMarker);
    seen.marker_slot = UsableSize(p);
    Free(p);
  }
  {
    testing::ChurningThreads churn(4, &AllocateMarker, [](std::mt19937& rng) -> size_t { return rng() % 1000; });
    seen.addrs.reserve(churn.size() * testing::ChurningThreads::kSlots * 2);
    std::vector<uintptr_t> held;
    for (int round = 0; round < 50; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const auto visit = [&] {
        seen.addrs.clear();
        seen.with_caller = 0;
        ForEachSampledAllocation(&Visit, &seen);
      };
      ASSERT_TRUE(churn.WhileStopped(visit, held));
      std::sort(seen.addrs.begin(), seen.addrs.end());
      EXPECT_TRUE(std::adjacent_find(seen.addrs.begin(), seen.addrs.end()) == seen.addrs.end()) << "round " << round;
      std::vector<uintptr_t> missing, extra;
      std::set_difference(held.begin(), held.end(), seen.addrs.begin(), seen.addrs.end(), std::back_inserter(missing));
      std::set_difference(seen.addrs.begin(), seen.addrs.end(), held.begin(), held.end(), std::back_inserter(extra));
      // A held object was recorded before Allocate returned and is not freed.
      EXPECT_TRUE(missing.empty()) << missing.size() << " held objects missing in round " << round;
      // A thread may be stopped between Allocate returning and storing the
      // pointer, or between clearing it and the free reaching the profiler.
      EXPECT_LE(extra.size(), churn.size()) << "round " << round;
      EXPECT_EQ(seen.with_caller, seen.addrs.size()) << "round " << round;
    }
  }
  SetMemProfileRate(0);
}

}  // namespace
}  // namespace libdump
