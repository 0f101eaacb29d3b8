#include "symbolize.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace symbolize_probe {
// Out of line: a return address inside it names it.
__attribute__((noinline)) int Probe(int x) {
  asm volatile("" : "+r"(x));
  return x * 5 + 3;
}
}  // namespace symbolize_probe

namespace {

using namespace libdump::readdump;

std::string SelfMaps() {
  std::ifstream f("/proc/self/maps");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string Hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

TEST(OfflineSymbolizer, NamesAFunctionWithItsSourceLine) {
  OfflineSymbolizer names(SelfMaps());
  // A return address a few bytes into the function.
  const auto pc = reinterpret_cast<uint64_t>(&symbolize_probe::Probe) + 5;
  const std::string n = names.Name(pc);
  EXPECT_EQ(n.rfind("symbolize_probe::Probe(int) (", 0), 0u) << n;
  EXPECT_NE(n.find("symbolize_test.cc:"), std::string::npos) << n;
  EXPECT_EQ(names.Name(16), "");
}

TEST(OfflineSymbolizer, NoMapsNamesNothing) {
  OfflineSymbolizer names("");
  EXPECT_EQ(names.Name(reinterpret_cast<uint64_t>(&symbolize_probe::Probe) + 5), "");
}

TEST(RewriteStacks, ReplacesOnlyHexFramesOfStacks) {
  OfflineSymbolizer names(SelfMaps());
  const std::string pc = Hex(reinterpret_cast<uint64_t>(&symbolize_probe::Probe) + 5);
  const std::string trace = "{\"traceEvents\":[\n{\"ph\":\"X\",\"name\":\"blocked\",\"args\":{\"stack\": [\"operator[]\",\"" +
                            pc + "\",\"0x10\"]}},\n{\"ph\":\"i\",\"args\":{\"address\":\"" + pc +
                            "\",\"stack\":[]}}]}\n";
  SymbolizeCounts counts;
  const std::string out = RewriteStacks(trace, names, &counts);
  EXPECT_EQ(counts.hex, 2u);
  EXPECT_EQ(counts.named, 1u);
  EXPECT_NE(out.find("\"operator[]\",\"symbolize_probe::Probe(int) ("), std::string::npos) << out;
  EXPECT_NE(out.find(",\"0x10\"]"), std::string::npos) << out;           // no module there: kept
  EXPECT_NE(out.find("\"address\":\"" + pc + "\""), std::string::npos) << out;  // not a frame: kept
}

TEST(TraceMaps, UnescapesTheMapsString) {
  const std::string trace =
      "{\"traceEvents\":[],\"otherData\":{\"maps\":\"1000-2000 r-xp 00000000 08:01 12 \\/bin\\/x\\n3000-4000 rw-p "
      "00000000 00:00 0 \\u005bheap]\\n\"}}";
  EXPECT_EQ(TraceMaps(trace), "1000-2000 r-xp 00000000 08:01 12 /bin/x\n3000-4000 rw-p 00000000 00:00 0 [heap]\n");
  EXPECT_EQ(TraceMaps("{\"traceEvents\":[]}"), "");
}

}  // namespace
