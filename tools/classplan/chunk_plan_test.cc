// ChunkPlan: chunks cut at the first record boundary past each `target`
// bytes, covering the dump without gaps; a serial record makes its whole
// chunk serial instead of cutting one around it.
#include "chunk_plan.h"

#include <gtest/gtest.h>

namespace libdump::dumptohprof {
namespace {

TEST(ChunkPlan, CutsAtTheFirstBoundaryPastTheTarget) {
  ChunkPlan plan(100);
  for (uint64_t at = 16; at < 1016; at += 30) plan.Add(at, false);
  plan.Finish(1036);
  const auto& c = plan.chunks();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front().start, 16u);
  EXPECT_EQ(c.back().end, 1036u);
  for (size_t i = 0; i < c.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(c[i].start, c[i - 1].end);
    }
    if (i + 1 < c.size()) {
      EXPECT_EQ(c[i].end - c[i].start, 120u);  // 4 records of 30: the first past 100
    }
    EXPECT_FALSE(c[i].serial);
  }
}

TEST(ChunkPlan, ASerialRecordMakesItsChunkSerial) {
  ChunkPlan plan(100);
  for (uint64_t at = 0; at < 1000; at += 10) plan.Add(at, at == 250 || at == 260 || at == 990);
  plan.Finish(1000);
  const auto& c = plan.chunks();
  ASSERT_EQ(c.size(), 10u);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].serial, i == 2 || i == 9) << i;
}

TEST(ChunkPlan, ARecordLargerThanTheTargetIsAChunkOfItsOwn) {
  ChunkPlan plan(100);
  plan.Add(16, false);
  plan.Add(20, true);  // 10 000 bytes
  plan.Add(10020, false);
  plan.Finish(10030);
  const auto& c = plan.chunks();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].start, 16u);
  EXPECT_EQ(c[0].end, 10020u);
  EXPECT_TRUE(c[0].serial);
  EXPECT_EQ(c[1].start, 10020u);
  EXPECT_FALSE(c[1].serial);
}

TEST(ChunkPlan, NoRecordsNoChunks) {
  ChunkPlan plan;
  plan.Finish(16);
  EXPECT_TRUE(plan.chunks().empty());
}

}  // namespace
}  // namespace libdump::dumptohprof
