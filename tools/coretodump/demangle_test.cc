#include "demangle.h"

#include <gtest/gtest.h>

namespace libdump::coretodump {
namespace {

TEST(DemangleTypeName, TypeNamesAndWhatIsNone) {
  EXPECT_EQ(DemangleTypeName("_ZN6shapes6Circle4AreaEv"), "shapes::Circle::Area()");
  EXPECT_EQ(DemangleTypeName("N5shape6CircleE"), "shape::Circle");  // a type_info's name
  EXPECT_EQ(DemangleTypeName("main"), "main");
  EXPECT_EQ(DemangleTypeName("_ZN6shapes"), "_ZN6shapes");  // cut short
  EXPECT_EQ(DemangleTypeName(""), "");
}

}  // namespace
}  // namespace libdump::coretodump
