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

}  // namespace
}  // namespace libdump::internal
