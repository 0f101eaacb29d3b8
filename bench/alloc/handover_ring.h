// What the cross-thread workloads (remote_mix, cross_mix) share: the
// xorshift generator behind their fixed seeds, and the ring through which a
// thread hands blocks to the next one to free.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace alloc_bench {

inline uint64_t Next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// Single producer (the previous thread), single consumer (the owner).
// Cache-line separated indices, so the ring itself costs what any SPSC ring
// costs and not false sharing between the two ends.
struct alignas(64) Ring {
  static constexpr size_t kSize = 4096;
  alignas(64) std::atomic<uint64_t> head{0};  // next to read (consumer)
  alignas(64) std::atomic<uint64_t> tail{0};  // next to write (producer)
  alignas(64) char* slot[kSize];

  bool Push(char* p) {
    const uint64_t t = tail.load(std::memory_order_relaxed);
    if (t - head.load(std::memory_order_acquire) == kSize) return false;
    slot[t % kSize] = p;
    tail.store(t + 1, std::memory_order_release);
    return true;
  }
  // Frees everything queued; returns how many. With `sum`, adds each
  // block's first byte to it before the free, as a consumer of messages
  // would read them.
  uint64_t Drain(uint64_t* sum = nullptr) {
    const uint64_t h = head.load(std::memory_order_relaxed);
    const uint64_t t = tail.load(std::memory_order_acquire);
    for (uint64_t i = h; i != t; ++i) {
      char* p = slot[i % kSize];
      if (sum != nullptr) *sum += static_cast<unsigned char>(p[0]);
      free(p);
    }
    head.store(t, std::memory_order_release);
    return t - h;
  }
};

}  // namespace alloc_bench
