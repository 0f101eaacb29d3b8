#include "packed_u64.h"

#include <gtest/gtest.h>

#include <random>

namespace libdump::heapgraph {
namespace {

// Values read back exactly, packed or not; the packed form costs 4 bytes a
// value and 8 a block.
TEST(PackedU64, IncreasingValuesPackToFourBytesEach) {
  PackedU64 p;
  std::vector<uint64_t> want;
  uint64_t v = 0xc000000000;
  for (int i = 0; i < 1000; ++i) {
    v += 16 + (i % 7) * 8;
    want.push_back(v);
    p.push_back(v);
  }
  ASSERT_EQ(p.size(), want.size());
  EXPECT_TRUE(p.packed());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(p[i], want[i]) << i;
  p.shrink_to_fit();
  // 1000 values (in whole pages: a BigArray's storage is a mapping), 16 blocks.
  EXPECT_EQ(p.MemoryBytes(), big_array::PageRound(1000u * 4) + 16u * 8);
}

TEST(PackedU64, AnyValueFallsBackToEightBytesAndStaysExact) {
  // Below its block's first value, 4 GiB above it, the largest value.
  for (uint64_t odd : {uint64_t{5}, uint64_t{1130} + (uint64_t{1} << 32), UINT64_MAX}) {
    PackedU64 p;
    std::vector<uint64_t> want;
    for (uint64_t i = 0; i < 200; ++i) {
      const uint64_t v = i == 130 ? odd : 1000 + i;
      want.push_back(v);
      p.push_back(v);
    }
    EXPECT_FALSE(p.packed()) << odd;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(p[i], want[i]) << odd << " " << i;
  }
  std::mt19937_64 rng(22);
  PackedU64 p;
  std::vector<uint64_t> want;
  for (int i = 0; i < 500; ++i) {
    want.push_back(rng());
    p.push_back(want.back());
  }
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(p[i], want[i]);
}

// Exactly 2^32 - 1 above the block's first value still packs; 2^32 does not.
TEST(PackedU64, TheBoundIsFourGiBFromTheBlocksFirst) {
  PackedU64 a, b;
  a.push_back(10);
  a.push_back(10 + uint64_t{UINT32_MAX});
  EXPECT_TRUE(a.packed());
  EXPECT_EQ(a[1], 10 + uint64_t{UINT32_MAX});
  b.push_back(10);
  b.push_back(10 + (uint64_t{1} << 32));
  EXPECT_FALSE(b.packed());
  EXPECT_EQ(b[1], 10 + (uint64_t{1} << 32));
}

}  // namespace
}  // namespace libdump::heapgraph
