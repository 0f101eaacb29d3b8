// For tests that compare what they see with the world stopped (the heap
// walk, the profiler's table) with the truth: threads that churn the heap,
// keeping a record of the objects they hold, and a stop of the world with
// the allocator's section marker as the gate, as WriteHeapDump stops it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "allocator_hooks.h"
#include "heap_walk.h"
#include "libdump/heap.h"
#include "platform/capture/stop_the_world.h"

namespace libdump::testing {

class ChurningThreads {
 public:
  static constexpr size_t kSlots = 512;

  // Each thread frees or makes (with `make`) one of its kSlots tracked objects
  // at random, then allocates and frees a short-lived one of other_size(rng).
  ChurningThreads(int threads, void* (*make)(), size_t (*other_size)(std::mt19937&)) : held_(threads) {
    capture::SetStopGate(capture::StopGate{&Inside});
    internal::SetSectionExitHook(&capture::StopIfRequested);
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t, make, other_size] {
        std::mt19937 rng(t);
        Held& h = held_[t];
        while (!stop_.load(std::memory_order_relaxed)) {
          auto& slot = h.slots[rng() % kSlots];
          if (void* p = slot.load(std::memory_order_relaxed)) {
            slot.store(nullptr, std::memory_order_release);
            Free(p);
          } else {
            slot.store(make(), std::memory_order_release);
          }
          Free(Allocate(other_size(rng)));
        }
      });
    }
  }
  ~ChurningThreads() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    internal::SetSectionExitHook(nullptr);
    capture::SetStopGate(capture::StopGate{});
  }
  ChurningThreads(const ChurningThreads&) = delete;
  ChurningThreads& operator=(const ChurningThreads&) = delete;

  size_t size() const { return threads_.size(); }

  // Stops every other thread, calls look() and then held (the sorted tracked
  // objects, read while still stopped), and resumes. Returns false if the
  // world could not be stopped.
  template <typename Look>
  bool WhileStopped(Look&& look, std::vector<uintptr_t>& held) {
    capture::WorldStop world(stop_slots_.data(), stop_slots_.size());
    if (!world.Stop()) return false;
    look();
    held.clear();
    for (const Held& h : held_) {
      for (const auto& s : h.slots) {
        if (void* p = s.load(std::memory_order_acquire)) held.push_back(reinterpret_cast<uintptr_t>(p));
      }
    }
    world.Resume();
    std::sort(held.begin(), held.end());
    return true;
  }

 private:
  struct Held {
    std::atomic<void*> slots[kSlots] = {};
  };
  static bool Inside() { return internal::InAllocator(); }

  std::vector<Held> held_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::vector<capture::ThreadSlot> stop_slots_ = std::vector<capture::ThreadSlot>(64);
};

}  // namespace libdump::testing
