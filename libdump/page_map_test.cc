#include "page_map.h"

#include <gtest/gtest.h>

#include <memory>

namespace libdump::internal {
namespace {

Span* Fake(uintptr_t n) { return reinterpret_cast<Span*>(n * 64); }

TEST(PageMap, UnknownAddressesReadAsNull) {
  auto map = std::make_unique<PageMap>();
  EXPECT_EQ(map->Get(0), nullptr);
  EXPECT_EQ(map->Get(0x7f0000001000), nullptr);
  EXPECT_EQ(map->Get(~uintptr_t{0}), nullptr);  // beyond 48 bits
}

TEST(PageMap, SetCoversEveryPageOfTheRangeAndNothingElse) {
  auto map = std::make_unique<PageMap>();
  // Straddles a leaf boundary (2 GiB) on purpose.
  const uintptr_t start = (uintptr_t{1} << 31) - 3 * kPageSize;
  ASSERT_TRUE(map->Ensure(start, start + 6 * kPageSize));
  map->Set(start, 6, Fake(1));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(map->Get(start + i * kPageSize), Fake(1));
    EXPECT_EQ(map->Get(start + i * kPageSize + kPageSize - 1), Fake(1));
  }
  EXPECT_EQ(map->Get(start - 1), nullptr);
  EXPECT_EQ(map->Get(start + 6 * kPageSize), nullptr);
  map->Set(start + kPageSize, 1, nullptr);
  EXPECT_EQ(map->Get(start + kPageSize), nullptr);
  EXPECT_EQ(map->Get(start), Fake(1));
}

// The first range ensured is the home window: its 2 GiB resolve without a
// radix leaf (one load per lookup); what lies beyond goes through the radix.
TEST(PageMap, FirstRangeIsServedByTheHomeWindow) {
  auto map = std::make_unique<PageMap>();
  // Not 2 GiB-aligned: the window starts at the first range, not at a leaf.
  const uintptr_t start = 0x7f0000000000 + 3 * PageMap::kHomeBytes / 4;
  ASSERT_TRUE(map->Ensure(start, start + PageMap::kHomeBytes / 2));
  EXPECT_EQ(map->radix_leaves(), 0);
  map->Set(start, 1, Fake(1));
  map->Set(start + PageMap::kHomeBytes - kPageSize, 1, Fake(2));
  EXPECT_EQ(map->Get(start + 5), Fake(1));
  EXPECT_EQ(map->Get(start + PageMap::kHomeBytes - 1), Fake(2));
  EXPECT_EQ(map->Get(start - 1), nullptr);
  EXPECT_EQ(map->Get(start + PageMap::kHomeBytes), nullptr);
  EXPECT_EQ(map->Get(0), nullptr);
  EXPECT_EQ(map->Get(~uintptr_t{0}), nullptr);

  // A range that runs past the window's end: only the part beyond it needs a leaf.
  const uintptr_t beyond = start + PageMap::kHomeBytes;
  ASSERT_TRUE(map->Ensure(beyond - 2 * kPageSize, beyond + 2 * kPageSize));
  EXPECT_EQ(map->radix_leaves(), 1);
  map->Set(beyond - kPageSize, 2, Fake(3));
  EXPECT_EQ(map->Get(beyond - kPageSize), Fake(3));
  EXPECT_EQ(map->Get(beyond), Fake(3));
  EXPECT_EQ(map->Get(start + PageMap::kHomeBytes - kPageSize), Fake(3));
  EXPECT_EQ(map->Get(start), Fake(1));
}

}  // namespace
}  // namespace libdump::internal
