#include "thread_unwinder.h"

#include <gtest/gtest.h>
#include <ucontext.h>

#include "testing/self_image.h"

namespace libdump::coretodump {
namespace {

// Captures its own registers two calls deep and unwinds them through the
// image: the frames are these functions, innermost first, sp increasing.
__attribute__((noinline)) std::vector<UnwoundFrame> UnwindHereInner() {
  ucontext_t uc;
  getcontext(&uc);
  testing::SelfImage image(uc);
  ThreadUnwinder u(image, {});
  EXPECT_TRUE(u.problems().empty()) << u.problems()[0];
  return u.Unwind(image.Threads()[0]);
}

__attribute__((noinline)) std::vector<UnwoundFrame> UnwindHereOuter() {
  auto f = UnwindHereInner();
  asm volatile("" ::: "memory");  // not a tail call
  return f;
}

TEST(ThreadUnwinder, UnwindsAndNamesTheCallersFrames) {
  const std::vector<UnwoundFrame> f = UnwindHereOuter();
  ASSERT_GE(f.size(), 3u);
  std::vector<std::string> names;
  for (const auto& x : f) names.push_back(x.name);
  auto at = [&](const std::string& n) {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i].find(n) != std::string::npos) return static_cast<int>(i);
    return -1;
  };
  const int inner = at("UnwindHereInner"), outer = at("UnwindHereOuter"), test = at("UnwindsAndNamesTheCallersFrames");
  ASSERT_GE(inner, 0) << names[0];
  EXPECT_EQ(outer, inner + 1);
  EXPECT_GT(test, outer);
  EXPECT_GE(at("main"), test);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GT(f[i].sp, f[i - 1].sp);
  EXPECT_LE(f[inner].entry, f[inner].pc);
  EXPECT_EQ(f[inner].symbol.find("_Z"), 0u);  // mangled, beside the demangled name
}

TEST(ThreadUnwinder, WithoutModulesTheTopFrameComesFromTheRegisters) {
  struct Empty final : procimage::ProcessImage {
    std::vector<procimage::ImageMapping> maps;
    std::vector<procimage::ImageThread> threads;
    std::vector<procimage::ImageModule> modules;
    std::string Describe() const override { return "empty"; }
    const std::vector<procimage::ImageMapping>& Mappings() const override { return maps; }
    const std::vector<procimage::ImageThread>& Threads() const override { return threads; }
    const std::vector<procimage::ImageModule>& Modules() const override { return modules; }
    size_t Read(uint64_t, void*, size_t) const override { return 0; }
  } image;
  procimage::ImageThread t;
  t.tid = 7;
  t.regs[19] = 0x7000;
  t.regs[16] = 0x1234;
  image.threads.push_back(t);
  ThreadUnwinder u(image, {});
  const auto f = u.Unwind(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].sp, 0x7000u);
  EXPECT_EQ(f[0].pc, 0x1234u);
  EXPECT_EQ(f[0].name, "0x1234");
  t.regs[19] = 0;
  EXPECT_TRUE(u.Unwind(t).empty());
}

}  // namespace
}  // namespace libdump::coretodump
