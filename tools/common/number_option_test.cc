#include "number_option.h"

#include <gtest/gtest.h>

namespace libdump::tools {
namespace {

TEST(NumberOption, InRange) {
  EXPECT_EQ(ParseUintOption("0", 0, 256), 0u);
  EXPECT_EQ(ParseUintOption("256", 0, 256), 256u);
  EXPECT_EQ(ParseUintOption("4095", 1, 4095), 4095u);
}

TEST(NumberOption, RefusesWhatLexicalCastWouldWrap) {
  EXPECT_FALSE(ParseUintOption("-1", 0, 256));
  EXPECT_FALSE(ParseUintOption("+1", 0, 256));
  EXPECT_FALSE(ParseUintOption("", 0, 256));
  EXPECT_FALSE(ParseUintOption("4x", 0, 256));
  EXPECT_FALSE(ParseUintOption(" 4", 0, 256));
  EXPECT_FALSE(ParseUintOption("257", 0, 256));
  EXPECT_FALSE(ParseUintOption("0", 1, 4095));
  EXPECT_FALSE(ParseUintOption("18446744073709551616", 0, UINT64_MAX));
}

}  // namespace
}  // namespace libdump::tools
