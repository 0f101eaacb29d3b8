#include "vtable_classes.h"

#include <gtest/gtest.h>

#include "testing/fake_image.h"

namespace libdump::coretodump {
namespace {

constexpr uint64_t kRo = 0x400000, kRw = 0x600000;

// RTTI laid out as the Itanium ABI does: the ABI class's own typeinfo,
// its vtable, a class typeinfo pointing into that vtable, the class vtable.
struct Rtti {
  testing::FakeImage image;
  Rtti() {
    image.Map(kRo, kRo + 0x1000, "r--", "/lib/prog");
    image.Map(kRw, kRw + 0x1000, "rw-", "/lib/prog");
    image.PutString(kRo + 0x100, "N10__cxxabiv120__si_class_type_infoE");
    image.PutWord(kRo + 0x208, kRo + 0x100);  // its typeinfo's name
    image.PutWord(kRo + 0x308, kRo + 0x200);  // its vtable's RTTI word
  }
  // A class named `mangled` whose vtable's address point is returned.
  uint64_t Class(uint64_t at, const std::string& mangled, uint64_t ti_vptr = kRo + 0x310) {
    image.PutWord(at, ti_vptr);
    image.PutWord(at + 8, at + 0x40);
    image.PutString(at + 0x40, mangled);
    image.PutWord(at + 0x88, at);  // the vtable's RTTI word at +0x88, address point +0x90
    return at + 0x90;
  }
};

TEST(VtableClasses, NamesClassesFromRttiAndKeepsTheSmallestSize) {
  Rtti r;
  const uint64_t circle = r.Class(kRo + 0x400, "N5shape6CircleE");
  const uint64_t local = r.Class(kRo + 0x600, "*N12_GLOBAL__N_16HiddenE");
  VtableClasses c(r.image);
  EXPECT_TRUE(c.Note(circle, 48));
  EXPECT_TRUE(c.Note(circle, 32));
  EXPECT_TRUE(c.Note(local, 16));
  ASSERT_EQ(c.classes().size(), 2u);
  EXPECT_EQ(c.classes()[0].name, "shape::Circle");
  EXPECT_EQ(c.classes()[0].vtable, circle);
  EXPECT_EQ(c.classes()[0].size, 32u);
  EXPECT_EQ(c.classes()[1].name, "(anonymous namespace)::Hidden");
}

TEST(VtableClasses, RefusesWordsThatAreNoVtablePointers) {
  Rtti r;
  // RTTI whose type_info's vtable is not one of the ABI's classes.
  const uint64_t fake = r.Class(kRo + 0x800, "N5shape6CircleE", kRo + 0x900);
  // A "vtable" in writable memory.
  r.image.PutWord(kRw + 0x8, kRo + 0x400 + 0);
  VtableClasses c(r.image);
  EXPECT_FALSE(c.Note(fake, 16));
  EXPECT_FALSE(c.Note(kRw + 0x10, 16));
  EXPECT_FALSE(c.Note(kRo + 0x493, 16));  // unaligned
  EXPECT_FALSE(c.Note(8, 16));
  EXPECT_FALSE(c.Note(0xdead000000, 16));  // unmapped
  EXPECT_TRUE(c.classes().empty());
}

}  // namespace
}  // namespace libdump::coretodump
