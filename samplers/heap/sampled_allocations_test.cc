// ForEachSampledAllocation with the world running: readers race the
// allocator's sample hook (and the live table's growth, which tombstone churn
// triggers often), so TSan checks the lock-free read side. Once the writers
// are done the visit must be exact.
//
// The writers park instead of exiting: libunwind (which checks each new end
// of a frame-pointer walk once) keeps a per-thread cache whose destructor
// crashes under TSan when the thread exits.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include <unistd.h>
#include <vector>

#include "libdump/heap.h"
#include "libdump/profiler.h"

namespace libdump {
namespace {

constexpr size_t kSlots = 1024;
constexpr size_t kMarker = 3000;

struct Seen {
  size_t slot_size = 0;
  std::vector<uintptr_t> addrs;
  size_t bad = 0;  // visits of the marker size with an empty stack
};

void Visit(void* ctx, uintptr_t addr, size_t size, const uintptr_t*, size_t npcs) {
  auto* s = static_cast<Seen*>(ctx);
  if (size != s->slot_size) return;
  s->addrs.push_back(addr);
  if (npcs == 0) ++s->bad;
}

TEST(SampledAllocations, ConcurrentReadersAndExactOnceWritersAreDone) {
  SetMemProfileRate(1);
  ASSERT_TRUE(InstallHeapProfiler());
  Seen seen;
  {
    void* p = Allocate(kMarker);
    seen.slot_size = UsableSize(p);
    Free(p);
  }
  constexpr int kThreads = 3;
  std::vector<std::vector<void*>> held(kThreads, std::vector<void*>(kSlots));
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 20000; ++i) {
        void*& slot = held[t][rng() % kSlots];
        if (slot != nullptr) {
          Free(slot);
          slot = nullptr;
        } else {
          slot = Allocate(kMarker);
        }
      }
      running.fetch_sub(1, std::memory_order_release);
      for (;;) pause();
    });
    threads.back().detach();
  }
  seen.addrs.reserve(kThreads * kSlots * 2);
  int rounds = 0;
  while (running.load(std::memory_order_acquire) > 0) {
    ++rounds;
    seen.addrs.clear();
    ForEachSampledAllocation(&Visit, &seen);
    // Never more than every held object plus one in flight per thread.
    EXPECT_LE(seen.addrs.size(), kThreads * (kSlots + 1));
  }
  EXPECT_GT(rounds, 1);
  EXPECT_EQ(seen.bad, 0u);

  seen.addrs.clear();
  ForEachSampledAllocation(&Visit, &seen);
  std::vector<uintptr_t> want;
  for (auto& h : held) {
    for (void* p : h) {
      if (p != nullptr) want.push_back(reinterpret_cast<uintptr_t>(p));
    }
  }
  std::sort(want.begin(), want.end());
  std::sort(seen.addrs.begin(), seen.addrs.end());
  EXPECT_EQ(seen.addrs, want);
  for (auto& h : held) {
    for (void* p : h) Free(p);
  }
  SetMemProfileRate(0);
}

}  // namespace
}  // namespace libdump
