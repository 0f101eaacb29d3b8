// The walk as WriteHeapDump will run it: every other thread stopped by
// libdump::capture, with the allocator's section marker as the stop gate.
// Threads record what they hold; with the world stopped the walk must match
// the records exactly, up to the one object a thread may have in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "heap_walk.h"
#include "libdump/heap.h"
#include "stop_the_world.h"

namespace libdump {
namespace {

constexpr size_t kSlots = 512;
constexpr size_t kMarker = 2000;  // 2048-byte slots: only this test's objects

struct Worker {
  std::atomic<void*> held[kSlots] = {};
};

bool Inside() { return internal::InAllocator(); }

TEST(HeapWalkStopped, WalkMatchesWhatStoppedThreadsHold) {
  capture::SetStopGate(capture::StopGate{&Inside});
  internal::SetSectionExitHook(&capture::StopIfRequested);
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
          slot.store(Allocate(kMarker), std::memory_order_release);
        }
        // Other sizes, large spans included, keep the page heap busy.
        void* q = Allocate(rng() % 64 == 0 ? 100000 : rng() % 1000);
        Free(q);
      }
    });
  }
  std::vector<capture::ThreadSlot> slots(64);
  std::vector<uintptr_t> seen;
  seen.reserve(1 << 16);
  for (int round = 0; round < 50; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    capture::WorldStop world(slots.data(), slots.size());
    ASSERT_TRUE(world.Stop());
    seen.clear();
    internal::ForEachObject(
        [](const ObjectInfo& o, void* c) {
          if (o.size == 2048) static_cast<std::vector<uintptr_t>*>(c)->push_back(o.addr);
        },
        &seen);
    std::vector<uintptr_t> held;
    for (auto& w : workers) {
      for (auto& s : w.held) {
        if (void* p = s.load(std::memory_order_acquire)) held.push_back(reinterpret_cast<uintptr_t>(p));
      }
    }
    world.Resume();
    ASSERT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    std::sort(held.begin(), held.end());
    std::vector<uintptr_t> missing, extra;
    std::set_difference(held.begin(), held.end(), seen.begin(), seen.end(), std::back_inserter(missing));
    std::set_difference(seen.begin(), seen.end(), held.begin(), held.end(), std::back_inserter(extra));
    // A held object is live: the walk must report it.
    EXPECT_TRUE(missing.empty()) << missing.size() << " held objects missing in round " << round;
    // Each thread may be stopped between malloc returning and recording, or
    // between unrecording and free: at most one unrecorded object each.
    EXPECT_LE(extra.size(), static_cast<size_t>(kThreads)) << "round " << round;
  }
  stop = true;
  for (auto& th : threads) th.join();
  internal::SetSectionExitHook(nullptr);
  capture::SetStopGate(capture::StopGate{});
}

}  // namespace
}  // namespace libdump
