// The known allocations of the walker's tests, made on glibc's malloc by one
// thread: kPerSize blocks of each size class, mmapped blocks (one moved
// forward by memalign), and frees chosen to land in the thread's tcache, a
// fastbin and the other bins. The vectors are reserved first so that
// recording a pointer allocates nothing; nothing may be allocated between
// the frees and the snapshot or core, or it would reuse them.
#pragma once

#include <malloc.h>

#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <vector>

namespace libdump::heapwalk::testing {

constexpr size_t kSizes[] = {24, 100, 1000, 5000, 40000};
constexpr int kPerSize = 64, kLarge = 3;
constexpr size_t kLargeSize = 300 << 10;
// Per thread: freed into the tcache (5 of 100 bytes, 7 of 24, 7 of 1000),
// fastbins (13 of 24) and bins (the other 24 odd ones of 1000, 31 of 5000
// and of 40000, each between live neighbours).
constexpr size_t kFreedPerThread = 5 + 20 + 3 * 31;
constexpr size_t kLivePerThread = kLarge + 1 + std::size(kSizes) * kPerSize - kFreedPerThread;

struct KnownHeap {
  std::vector<void*> live, tcache, fastbin, bin;
  KnownHeap() { live.reserve(1024), tcache.reserve(64), fastbin.reserve(64), bin.reserve(256); }

  void Allocate() {
    void* by_size[std::size(kSizes)][kPerSize];
    for (size_t s = 0; s < std::size(kSizes); ++s)
      for (int i = 0; i < kPerSize; ++i) by_size[s][i] = std::malloc(kSizes[s]);
    for (int i = 0; i < kLarge; ++i) live.push_back(std::malloc(kLargeSize + i * 4096));
    live.push_back(aligned_alloc(1 << 16, kLargeSize));
    for (size_t s = 0; s < std::size(kSizes); ++s) {
      for (int i = 0; i < kPerSize; ++i) {
        void* p = by_size[s][i];
        std::vector<void*>* to = &live;
        if (kSizes[s] == 100 && i < 5) {
          to = &tcache;
        } else if (kSizes[s] == 24 && i < 20) {
          to = i < 7 ? &tcache : &fastbin;  // the tcache takes 7
        } else if (kSizes[s] >= 1000 && i % 2 == 1 && i < kPerSize - 1) {
          to = kSizes[s] == 1000 && i < 14 ? &tcache : &bin;  // 1000's tcache fills first
        }
        to->push_back(p);
        if (to != &live) std::free(p);
      }
    }
  }
};

}  // namespace libdump::heapwalk::testing
