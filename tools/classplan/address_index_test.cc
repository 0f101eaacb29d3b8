#include "address_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace libdump::dumptohprof {
namespace {

TEST(AddressIndex, StartsInteriorEndsAndGaps) {
  AddressIndex x;
  x.Add(0x1000, 16);
  x.Add(0x1010, 0);  // zero-size, right after
  x.Add(0x2000, 8);
  EXPECT_TRUE(x.Finish().empty());
  EXPECT_EQ(x.Find(0x1000), 0x1000u);
  EXPECT_EQ(x.Find(0x100F), 0x1000u);
  EXPECT_EQ(x.Find(0x1010), 0x1010u);  // the zero-size object, not one past the first
  EXPECT_EQ(x.Find(0x1011), 0u);
  EXPECT_EQ(x.Find(0x1FFF), 0u);
  EXPECT_EQ(x.Find(0x2007), 0x2000u);
  EXPECT_EQ(x.Find(0x2008), 0u);
  EXPECT_EQ(x.Find(0xFFF), 0u);
  EXPECT_EQ(x.Find(0), 0u);
  EXPECT_EQ(x.Find(~uint64_t{0}), 0u);
  EXPECT_EQ(x.end(), 0x2008u);
}

TEST(AddressIndex, PositionsOfObjectStartsOnly) {
  AddressIndex x;
  x.Add(0x2000, 8);  // out of order: positions count in address order
  x.Add(0x1000, 16);
  x.Add(0x1010, 0);
  x.Finish();
  EXPECT_EQ(x.PositionOf(0x1000), 0u);
  EXPECT_EQ(x.PositionOf(0x1010), 1u);
  EXPECT_EQ(x.PositionOf(0x2000), 2u);
  EXPECT_EQ(x.SizeAt(0), 16u);
  EXPECT_EQ(x.SizeAt(2), 8u);
  EXPECT_EQ(x.PositionOf(0x1008), AddressIndex::kNone);  // interior
  EXPECT_EQ(x.PositionOf(0x1FFF), AddressIndex::kNone);
  EXPECT_EQ(x.PositionOf(0), AddressIndex::kNone);
  EXPECT_EQ(x.PositionOf(0x2008), AddressIndex::kNone);
}

TEST(AddressIndex, UnsortedInputAndDuplicates) {
  AddressIndex x;
  x.Add(0x3000, 8);
  x.Add(0x1000, 8);
  x.Add(0x2000, 8);
  x.Add(0x1000, 8);
  EXPECT_EQ(x.Finish(), std::vector<uint64_t>{0x1000});
  EXPECT_EQ(x.Find(0x2004), 0x2000u);
  EXPECT_EQ(x.Find(0x3004), 0x3000u);
}

TEST(AddressIndex, HugeObjectsAndFarApartClusters) {
  AddressIndex x;
  x.Add(0x10000, uint64_t{6} << 30);  // 6 GiB: does not fit the 32-bit size
  x.Add(0x7f0000000000, 32);
  x.Finish();
  EXPECT_EQ(x.Find(0x10000 + (uint64_t{5} << 30)), 0x10000u);
  EXPECT_EQ(x.Find(0x10000 + (uint64_t{6} << 30)), 0u);
  EXPECT_EQ(x.Find(0x7f0000000010), 0x7f0000000000u);
  EXPECT_EQ(x.Find(0x400000000000), 0u);
}

// Against a brute-force map, over random objects and random probes.
TEST(AddressIndex, MatchesBruteForce) {
  std::mt19937_64 rng(7);
  AddressIndex x;
  std::map<uint64_t, uint64_t> objects;
  uint64_t a = 0x100000;
  for (int i = 0; i < 20000; ++i) {
    a += 16 * (rng() % 64);
    const uint64_t size = 16 * (rng() % 8);
    if (!objects.try_emplace(a, size).second) continue;
    x.Add(a, size);
    a += size;
  }
  ASSERT_TRUE(x.Finish().empty());
  EXPECT_LE(x.memory_bytes(), 16 * objects.size());
  for (int i = 0; i < 200000; ++i) {
    const uint64_t p = 0x100000 - 64 + rng() % (a - 0x100000 + 128);
    uint64_t want = 0;
    auto it = objects.upper_bound(p);
    if (it != objects.begin()) {
      --it;
      if (p - it->first < it->second || p == it->first) want = it->first;
    }
    ASSERT_EQ(x.Find(p), want) << std::hex << p;
  }
}

}  // namespace
}  // namespace libdump::dumptohprof
