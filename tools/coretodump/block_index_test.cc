#include "block_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace libdump::coretodump {
namespace {

TEST(BlockIndex, FindsStartsAndInteriorsNotGapsOrEnds) {
  const std::vector<heapwalk::LiveBlock> b = {{0x1000, 0x20}, {0x1030, 0x10}, {0x2000, 0x1000}};
  BlockIndex idx(b);
  EXPECT_EQ(idx.Find(0x1000), &b[0]);
  EXPECT_EQ(idx.Find(0x101f), &b[0]);
  EXPECT_EQ(idx.Find(0x1020), nullptr);  // one past the end
  EXPECT_EQ(idx.Find(0x102f), nullptr);  // the gap
  EXPECT_EQ(idx.Find(0x1038), &b[1]);
  EXPECT_EQ(idx.Find(0x2fff), &b[2]);
  EXPECT_EQ(idx.Find(0x3000), nullptr);
  EXPECT_EQ(idx.Find(0xfff), nullptr);
  EXPECT_EQ(idx.Find(0), nullptr);
  EXPECT_EQ(idx.Find(~uint64_t{0}), nullptr);
}

TEST(BlockIndex, AnyStartsInIsHalfOpen) {
  const std::vector<heapwalk::LiveBlock> b = {{0x1000, 0x20}, {0x2000, 0x10}};
  BlockIndex idx(b);
  EXPECT_TRUE(idx.AnyStartsIn(0x1000, 0x1001));
  EXPECT_FALSE(idx.AnyStartsIn(0x1001, 0x2000));
  EXPECT_TRUE(idx.AnyStartsIn(0x1001, 0x2001));
  EXPECT_FALSE(idx.AnyStartsIn(0x2001, 0x9000));
  EXPECT_FALSE(BlockIndex({}).AnyStartsIn(0, ~uint64_t{0}));
}

TEST(BlockIndex, FirstEndingAfter) {
  const std::vector<heapwalk::LiveBlock> b = {{0x1000, 0x20}, {0x2000, 0x10}};
  BlockIndex idx(b);
  EXPECT_EQ(idx.FirstEndingAfter(0), 0u);
  EXPECT_EQ(idx.FirstEndingAfter(0x1010), 0u);  // inside the first
  EXPECT_EQ(idx.FirstEndingAfter(0x1020), 1u);  // its end
  EXPECT_EQ(idx.FirstEndingAfter(0x2000), 1u);
  EXPECT_EQ(idx.FirstEndingAfter(0x2010), 2u);
}

}  // namespace
}  // namespace libdump::coretodump
