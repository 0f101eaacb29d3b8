#include "own_line.h"

#include <gtest/gtest.h>

namespace libdump::tools {
namespace {

TEST(OwnLine, SaysWhatWasLeftOutAndHowToShowIt) {
  EXPECT_EQ(OwnLine(0, 0, false), "");
  EXPECT_EQ(OwnLine(3, 4096, false), "libdump's own: 3 objects, 4096 bytes, excluded; --include-own to show");
  EXPECT_EQ(OwnLine(1, 16, true), "libdump's own: 1 objects, 16 bytes, included (--include-own)");
}

}  // namespace
}  // namespace libdump::tools
