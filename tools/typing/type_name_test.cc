#include "type_name.h"

#include <gtest/gtest.h>

namespace libdump::typing {
namespace {

TEST(NormalizeTypeName, DemanglerAndDwarfSpellingsMeet) {
  EXPECT_EQ(NormalizeTypeName("std::pair<const int, long unsigned int>"), NormalizeTypeName("std::pair<int const, unsigned long>"));
  EXPECT_EQ(NormalizeTypeName("std::array<int, 5>"), NormalizeTypeName("std::array<int, 5ul>"));
  EXPECT_EQ(NormalizeTypeName("std::vector<long long int> >"), NormalizeTypeName("std::vector<long long>>"));
  EXPECT_EQ(NormalizeTypeName("short unsigned int"), "unsigned short");
  EXPECT_EQ(NormalizeTypeName("signed char"), "signed char");
  EXPECT_NE(NormalizeTypeName("unsigned char"), NormalizeTypeName("char"));
  EXPECT_NE(NormalizeTypeName("Foo<1>"), NormalizeTypeName("Foo<12>"));
}

}  // namespace
}  // namespace libdump::typing
