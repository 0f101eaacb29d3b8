#include "samplers/symbolize/source_lines.h"

#include <gtest/gtest.h>

#include <string>

namespace libdump::samplers {
namespace {

uintptr_t g_ret = 0;
int g_line = 0, g_inlined_line = 0, g_call_line = 0;

__attribute__((noipa)) void Record() { g_ret = reinterpret_cast<uintptr_t>(__builtin_return_address(0)); }

__attribute__((noipa)) void Caller() {
  g_line = __LINE__ + 1;
  Record();
  asm volatile("" ::: "memory");  // not a tail call: the return address stays in Caller
}

__attribute__((always_inline)) inline void InlinedBody() {
  g_inlined_line = __LINE__ + 1;
  Record();
  asm volatile("" ::: "memory");
}

__attribute__((noipa)) void InlinedCaller() {
  g_call_line = __LINE__ + 1;
  InlinedBody();
  asm volatile("" ::: "memory");
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(SourceLines, FileAndLineOfACall) {
  Caller();
  SourceLines lines;
  const auto frames = lines.Lookup(g_ret - 1);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(EndsWith(frames[0].file, "samplers/symbolize/source_lines_test.cc")) << frames[0].file;
  EXPECT_EQ(frames[0].line, g_line);
  EXPECT_EQ(frames[0].function, "");
}

TEST(SourceLines, InlinedFramesInnermostFirst) {
  InlinedCaller();
  SourceLines lines;
  const auto frames = lines.Lookup(g_ret - 1);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NE(frames[0].function.find("InlinedBody"), std::string::npos) << frames[0].function;
  EXPECT_EQ(frames[0].line, g_inlined_line);
  EXPECT_TRUE(EndsWith(frames[0].file, "samplers/symbolize/source_lines_test.cc")) << frames[0].file;
  // The outer frame is the call site of the inlined function.
  EXPECT_EQ(frames[1].function, "");
  EXPECT_EQ(frames[1].line, g_call_line);
  EXPECT_TRUE(EndsWith(frames[1].file, "samplers/symbolize/source_lines_test.cc")) << frames[1].file;
}

TEST(SourceLines, NoDebugInformationIsEmpty) {
  SourceLines lines;
  EXPECT_TRUE(lines.Lookup(8).empty());
}

}  // namespace
}  // namespace libdump::samplers
