#include "platform/capture/symbol_tables.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace libdump::capture {
namespace {

namespace ns {
__attribute__((noinline)) int TemplateFree(int x) { return x * 3 + 1; }
}  // namespace ns

TEST(Symbolizer, NamesFunctionsOfTheExecutableAndOfLibc) {
  const std::vector<Module> modules = LoadedModules();
  Symbolizer sym(modules);
  EXPECT_GT(sym.symbol_count(), 100u);

  const auto fn = reinterpret_cast<uint64_t>(&ns::TemplateFree);
  Symbol s = sym.Lookup(fn + 1);
  EXPECT_EQ(s.entry, fn);
  EXPECT_EQ(Demangle(s.name), "libdump::capture::(anonymous namespace)::ns::TemplateFree(int)");
  ASSERT_NE(s.module, nullptr);
  EXPECT_NE(s.module->path.find("symbol_tables_test"), std::string::npos);

  int (*c_abs)(int) = &::abs;
  s = sym.Lookup(reinterpret_cast<uint64_t>(c_abs));
  EXPECT_EQ(s.name, "abs");
  ASSERT_NE(s.module, nullptr);
  EXPECT_NE(s.module->path.find("libc.so"), std::string::npos);

  EXPECT_EQ(sym.Lookup(16).module, nullptr);  // not in any module
}

TEST(Symbolizer, DemangleLeavesPlainNamesAlone) {
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Z3fooi"), "foo(int)");
  EXPECT_EQ(Demangle("_Znotmangled"), "_Znotmangled");
}

}  // namespace
}  // namespace libdump::capture
