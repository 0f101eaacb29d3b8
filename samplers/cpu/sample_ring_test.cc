#include "samplers/cpu/sample_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace libdump::samplers {
namespace {

TEST(SampleRing, FifoAndFullRingDrops) {
  SampleRing r(4);
  uintptr_t pcs[kMaxFrames + 5] = {};
  for (uintptr_t i = 0; i < kMaxFrames + 5; ++i) pcs[i] = i + 1;
  for (uint32_t i = 0; i < 4; ++i) EXPECT_TRUE(r.Push(i + 1, pcs, i));
  EXPECT_FALSE(r.Push(3, pcs, 1));
  EXPECT_EQ(r.dropped(), 3u);  // counted in weight: periods lost, not signals
  uint32_t next = 0;
  EXPECT_EQ(r.Drain([&](const StackSample& s) {
              EXPECT_EQ(s.weight, next + 1u);
              EXPECT_EQ(s.depth, next);
              ++next;
            }),
            4u);
  EXPECT_TRUE(r.Push(1, pcs, kMaxFrames + 5));  // room again; depth clamped
  r.Drain([&](const StackSample& s) {
    EXPECT_EQ(s.depth, kMaxFrames);
    EXPECT_EQ(s.pcs[kMaxFrames - 1], kMaxFrames);
  });
}

// Producers race each other and the consumer; every sample is either
// delivered intact once or counted as dropped.
TEST(SampleRing, ConcurrentProducersLoseNothingUnaccounted) {
  SampleRing r(256);
  constexpr int kProducers = 4, kPerProducer = 20000;
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      uintptr_t pcs[3];
      for (int i = 0; i < kPerProducer; ++i) {
        pcs[0] = static_cast<uintptr_t>(p);
        pcs[1] = static_cast<uintptr_t>(i);
        pcs[2] = pcs[0] ^ pcs[1];
        r.Push(1, pcs, 3);
      }
      done.fetch_add(1);
    });
  }
  uint64_t got = 0;
  std::vector<int> last(kProducers, -1);
  auto check = [&](const StackSample& s) {
    ASSERT_EQ(s.depth, 3u);
    ASSERT_EQ(s.pcs[2], s.pcs[0] ^ s.pcs[1]);
    const int p = static_cast<int>(s.pcs[0]);
    // Per producer, samples come out in the order they went in.
    ASSERT_GT(static_cast<int>(s.pcs[1]), last[p]);
    last[p] = static_cast<int>(s.pcs[1]);
    ++got;
  };
  while (done.load() < kProducers) r.Drain(check);
  for (auto& t : producers) t.join();
  r.Drain(check);
  EXPECT_EQ(got + r.dropped(), uint64_t{kProducers} * kPerProducer);
  EXPECT_GT(got, 0u);
}

}  // namespace
}  // namespace libdump::samplers
