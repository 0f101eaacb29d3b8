#include "demangle.h"

#include <gtest/gtest.h>

namespace libdump::coretodump {
namespace {

TEST(Demangle, FunctionsAndTypeNamesAndWhatIsNeither) {
  EXPECT_EQ(Demangle("_ZN6shapes6Circle4AreaEv"), "shapes::Circle::Area()");
  EXPECT_EQ(Demangle("N5shape6CircleE"), "shape::Circle");  // a type_info's name
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_ZN6shapes"), "_ZN6shapes");  // cut short
  EXPECT_EQ(Demangle(""), "");
}

}  // namespace
}  // namespace libdump::coretodump
