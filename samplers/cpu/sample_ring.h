// A bounded multi-producer, single-consumer queue of stack samples, filled
// from signal handlers and drained by a profiler thread.
//
// Each cell carries a sequence number (Vyukov's bounded queue): a producer
// claims a cell with one CAS on the head and publishes it with a release
// store; the consumer never waits for a slow producer, it stops at the first
// unpublished cell and comes back later. No locks, no allocation after
// construction (the cells are mmap'd), so Push is async-signal-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "samplers/unwind/frame_pointer_walk.h"

namespace libdump::samplers {

struct StackSample {
  uint64_t weight;  // how many periods this sample stands for (1 + timer overruns)
  uint32_t depth;
  uintptr_t pcs[kMaxFrames];
};

class SampleRing {
 public:
  explicit SampleRing(size_t capacity);  // rounded up to a power of two
  ~SampleRing();
  SampleRing(const SampleRing&) = delete;
  SampleRing& operator=(const SampleRing&) = delete;

  // Async-signal-safe. Returns how many samples the ring has taken so far,
  // this one included (so a producer can tell the consumer every so many),
  // or 0 (and counts the sample as dropped) when the ring is full.
  size_t Push(uint64_t weight, const uintptr_t* pcs, size_t depth);

  // Consumer side, one thread at a time. Calls f(const StackSample&) for each
  // published sample in order; returns how many.
  template <class F>
  size_t Drain(F&& f) {
    size_t n = 0;
    for (;;) {
      Cell& c = cells_[tail_ & mask_];
      if (c.seq.load(std::memory_order_acquire) != tail_ + 1) return n;
      f(static_cast<const StackSample&>(c.sample));
      c.seq.store(tail_ + mask_ + 1, std::memory_order_release);
      ++tail_;
      ++n;
    }
  }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t capacity() const { return mask_ + 1; }

 private:
  struct Cell {
    std::atomic<size_t> seq;
    StackSample sample;
  };
  Cell* cells_;
  size_t mask_;
  size_t bytes_;
  alignas(64) std::atomic<size_t> head_{0};
  alignas(64) size_t tail_ = 0;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace libdump::samplers
