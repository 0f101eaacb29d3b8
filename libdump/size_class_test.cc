#include "size_class.h"

#include <gtest/gtest.h>

namespace libdump::internal {
namespace {

TEST(SizeClass, EverySizeGetsTheSmallestClassThatFits) {
  for (size_t size = 0; size <= kMaxSmallSize; ++size) {
    const int c = SizeToClass(size);
    ASSERT_GE(c, 1);
    ASSERT_LT(c, kNumClasses);
    ASSERT_GE(g_classes[c].size, size) << size;
    if (c > 1) {
      ASSERT_LT(g_classes[c - 1].size, size) << size;
    }
  }
}

TEST(SizeClass, ClassesAreAlignedAndSpansFitTheBitmaps) {
  for (int c = 1; c < kNumClasses; ++c) {
    const ClassInfo& ci = g_classes[c];
    EXPECT_EQ(ci.size % kMinAlign, 0u) << c;
    EXPECT_GT(ci.size, g_classes[c - 1].size) << c;
    EXPECT_GE(ci.nslots, 1u);
    EXPECT_LE(ci.nslots, kMaxSlotsPerSpan) << c;
    const uint64_t bytes = uint64_t{ci.npages} * kPageSize;
    EXPECT_EQ(ci.nslots, bytes / ci.size);
    EXPECT_LE((bytes % ci.size) * 8, bytes) << "tail waste above 1/8 for class " << c;
  }
}

// A span with few slots would move between its owner's lists on almost every
// allocation (it rejoins with an eighth free): each span holds a bitmap word
// of slots, or 8 slots when that would take more than 8 pages.
TEST(SizeClass, SpansHoldEnoughSlotsToAvoidListThrash) {
  for (int c = 1; c < kNumClasses; ++c) {
    const ClassInfo& ci = g_classes[c];
    if (uint64_t{8} * kPageSize / ci.size >= 64) {
      EXPECT_GE(ci.nslots, 64u) << "class " << ci.size;
      EXPECT_LE(ci.npages, 8u) << "class " << ci.size;
    } else {
      EXPECT_GE(ci.nslots, 8u) << "class " << ci.size;
    }
  }
}

TEST(SizeClass, EveryPowerOfTwoUpToTheLimitIsAClass) {
  for (size_t p = kMinAlign; p <= kMaxSmallSize; p *= 2) EXPECT_EQ(g_classes[SizeToClass(p)].size, p);
}

TEST(SizeClass, SlotIndexDivisionIsExactAtEveryOffset) {
  for (int c = 1; c < kNumClasses; ++c) {
    const ClassInfo& ci = g_classes[c];
    for (uint64_t off = 0; off < uint64_t{ci.npages} * kPageSize; ++off) {
      ASSERT_EQ((off * ci.div_magic) >> kDivShift, off / ci.size) << "class " << c << " offset " << off;
    }
  }
}

TEST(SizeClass, MultipleTestFindsExactlyTheSlotStarts) {
  for (int c = 1; c < kNumClasses; ++c) {
    const ClassInfo& ci = g_classes[c];
    EXPECT_EQ(ci.span_bytes, ci.nslots * ci.size);
    for (uint64_t off = 0; off < uint64_t{ci.npages} * kPageSize; ++off) {
      ASSERT_EQ(off * ci.multiple_magic <= ci.multiple_magic - 1, off % ci.size == 0) << "class " << c << " offset " << off;
    }
  }
}

}  // namespace
}  // namespace libdump::internal
