#include "human_size.h"

#include <gtest/gtest.h>

namespace libdump::heapview {
namespace {

TEST(HumanSize, ThreeFiguresFromKibOn) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.00 KiB");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(43 * 1024 * 1024 + 512 * 1024), "43.5 MiB");
  EXPECT_EQ(HumanBytes(uint64_t{700} << 30), "700 GiB");
  EXPECT_EQ(HumanBytes(uint64_t{3} << 40), "3.00 TiB");
  EXPECT_EQ(HumanBytes(UINT64_MAX), "16.0 EiB");
}

TEST(HumanSize, CellKeepsTheExactBytesFirst) {
  EXPECT_EQ(BytesCell(224), "<td class=\"n\">224</td>");
  EXPECT_EQ(BytesCell(1572864), "<td class=\"n\">1,572,864 <span class=\"muted\">1.50 MiB</span></td>");
}

}  // namespace
}  // namespace libdump::heapview
