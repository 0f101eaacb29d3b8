#include "cxx_types.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

// Types this test's own DWARF describes (the test binary is built -g).
struct CxxTypesTestRecord {
  long id;
  std::string name;
  std::vector<int> values;
  CxxTypesTestRecord* next;
};
namespace cxx_types_test {
struct Inner {
  int a;
  double b;
};
enum class Color : unsigned char { kRed = 1, kBlue = 7 };
}  // namespace cxx_types_test

CxxTypesTestRecord* cxx_types_test_head;
cxx_types_test::Inner cxx_types_test_inners[3];
cxx_types_test::Color cxx_types_test_color = cxx_types_test::Color::kBlue;
std::map<int, CxxTypesTestRecord> cxx_types_test_map;

namespace libdump::typing {
namespace {

class CxxTypesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { program_ = CxxProgram::Open("/proc/self/exe").release(); }
  static void TearDownTestSuite() { delete program_; }
  static CxxProgram* program_;
};
CxxProgram* CxxTypesTest::program_ = nullptr;

TEST_F(CxxTypesTest, StructsHaveTheirMembersAtTheirOffsets) {
  CxxProgram& p = *program_;
  const uint32_t t = p.FindType("CxxTypesTestRecord");
  ASSERT_NE(t, kNoCxxType);
  const CxxType& r = p.type(t);
  EXPECT_EQ(r.kind, CxxKind::kStruct);
  EXPECT_EQ(r.size, sizeof(CxxTypesTestRecord));
  ASSERT_EQ(r.members.size(), 4u);
  EXPECT_EQ(r.members[0].name, "id");
  EXPECT_EQ(r.members[1].name, "name");
  EXPECT_EQ(r.members[1].offset, offsetof(CxxTypesTestRecord, name));
  EXPECT_EQ(p.type(r.members[1].type).name, "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >");
  EXPECT_EQ(r.members[2].offset, offsetof(CxxTypesTestRecord, values));
  EXPECT_EQ(r.members[3].offset, offsetof(CxxTypesTestRecord, next));
  const CxxType& next = p.type(r.members[3].type);
  EXPECT_EQ(next.kind, CxxKind::kPointer);
  EXPECT_EQ(next.elem, t);  // one type per name: the pointer's target is the same type
  EXPECT_EQ(next.name, "CxxTypesTestRecord*");
}

TEST_F(CxxTypesTest, TemplateArgumentsAndBasesAreRead) {
  CxxProgram& p = *program_;
  const uint32_t v = p.FindType("std::vector<int, std::allocator<int> >");
  ASSERT_NE(v, kNoCxxType);
  const CxxType& vt = p.type(v);
  ASSERT_FALSE(vt.template_types.empty());
  EXPECT_EQ(p.type(vt.template_types[0]).name, "int");
  ASSERT_FALSE(vt.members.empty());
  EXPECT_TRUE(vt.members[0].base);
  EXPECT_EQ(p.type(vt.members[0].type).name, "std::_Vector_base<int, std::allocator<int> >");
}

TEST_F(CxxTypesTest, GlobalsByAddressWithTheirTypes) {
  CxxProgram& p = *program_;
  const CxxGlobal* head = nullptr;
  const CxxGlobal* inners = nullptr;
  const CxxGlobal* color = nullptr;
  for (const CxxGlobal& g : p.globals()) {
    if (g.name == "cxx_types_test_head") head = &g;
    if (g.name == "cxx_types_test_inners") inners = &g;
    if (g.name == "cxx_types_test_color") color = &g;
  }
  ASSERT_NE(head, nullptr);
  ASSERT_NE(inners, nullptr);
  ASSERT_NE(color, nullptr);
  EXPECT_EQ(p.type(head->type).name, "CxxTypesTestRecord*");
  EXPECT_EQ(inners->size, sizeof cxx_types_test_inners);
  const CxxType& arr = p.type(inners->type);
  EXPECT_EQ(arr.kind, CxxKind::kArray);
  EXPECT_EQ(arr.count, 3u);
  EXPECT_EQ(p.type(arr.elem).name, "cxx_types_test::Inner");
  // Inside a global's bytes, the global; past them, not.
  EXPECT_EQ(p.GlobalAt(inners->addr + sizeof(cxx_types_test::Inner) + 4), inners);
  const CxxType& e = p.type(color->type);
  EXPECT_EQ(e.kind, CxxKind::kEnum);
  EXPECT_EQ(e.size, 1u);
  ASSERT_EQ(e.enumerators.size(), 2u);
  EXPECT_EQ(e.enumerators[1].first, "kBlue");
  EXPECT_EQ(e.enumerators[1].second, 7);
}

TEST(CxxTypes, NotElfOrNoDwarfIsOneLine) {
  EXPECT_ANY_THROW(CxxProgram::Open("/proc/self/status"));
  EXPECT_ANY_THROW(CxxProgram::Open("/nonexistent/file"));
}

}  // namespace
}  // namespace libdump::typing
