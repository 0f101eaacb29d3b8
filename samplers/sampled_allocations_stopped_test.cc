// ForEachSampledAllocation as WriteHeapDump calls it: every other thread
// stopped by libdump::capture, with the allocator's section marker as the
// stop gate. Sampling every allocation, threads are often stopped inside the
// profiler's hook, which runs outside allocator sections and so may hold the
// bucket table's lock: a reader that took that lock would hang here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "heap_walk.h"
#include "libdump/heap.h"
#include "libdump/profiler.h"
#include "stop_the_world.h"

namespace libdump {
namespace {

constexpr size_t kSlots = 512;
constexpr size_t kMarker = 2000;  // 2048-byte slots: only this test's objects

struct Worker {
  std::atomic<void*> held[kSlots] = {};
};

bool Inside() { return internal::InAllocator(); }

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
  capture::SetStopGate(capture::StopGate{&Inside});
  internal::SetSectionExitHook(&capture::StopIfRequested);
  SetMemProfileRate(1);
  ASSERT_TRUE(InstallHeapProfiler());
  Seen seen;
  {
    void* p = Allocate(kMarker);
    seen.marker_slot = UsableSize(p);
    Free(p);
  }
  constexpr int kThreads = 4;
  std::vector<Worker> workers(kThreads);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      Worker& w = workers[t];
      while (!stop.load(std::memory_order_relaxed)) {
        auto& slot = w.held[rng() % kSlots];
        if (void* p = slot.load(std::memory_order_relaxed)) {
          slot.store(nullptr, std::memory_order_release);
          Free(p);
        } else {
          slot.store(AllocateMarker(), std::memory_order_release);
        }
        Free(Allocate(rng() % 1000));
      }
    });
  }
  std::vector<capture::ThreadSlot> slots(64);
  seen.addrs.reserve(kThreads * kSlots * 2);
  for (int round = 0; round < 50; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    capture::WorldStop world(slots.data(), slots.size());
    ASSERT_TRUE(world.Stop());
    seen.addrs.clear();
    seen.with_caller = 0;
    ForEachSampledAllocation(&Visit, &seen);
    std::vector<uintptr_t> held;
    for (auto& w : workers) {
      for (auto& s : w.held) {
        if (void* p = s.load(std::memory_order_acquire)) held.push_back(reinterpret_cast<uintptr_t>(p));
      }
    }
    world.Resume();
    std::sort(held.begin(), held.end());
    std::sort(seen.addrs.begin(), seen.addrs.end());
    EXPECT_TRUE(std::adjacent_find(seen.addrs.begin(), seen.addrs.end()) == seen.addrs.end()) << "round " << round;
    std::vector<uintptr_t> missing, extra;
    std::set_difference(held.begin(), held.end(), seen.addrs.begin(), seen.addrs.end(), std::back_inserter(missing));
    std::set_difference(seen.addrs.begin(), seen.addrs.end(), held.begin(), held.end(), std::back_inserter(extra));
    // A held object was recorded before Allocate returned and is not freed.
    EXPECT_TRUE(missing.empty()) << missing.size() << " held objects missing in round " << round;
    // A thread may be stopped between Allocate returning and storing the
    // pointer, or between clearing it and the free reaching the profiler.
    EXPECT_LE(extra.size(), static_cast<size_t>(kThreads)) << "round " << round;
    EXPECT_EQ(seen.with_caller, seen.addrs.size()) << "round " << round;
  }
  stop = true;
  for (auto& th : threads) th.join();
  SetMemProfileRate(0);
  internal::SetSectionExitHook(nullptr);
  capture::SetStopGate(capture::StopGate{});
}

}  // namespace
}  // namespace libdump
