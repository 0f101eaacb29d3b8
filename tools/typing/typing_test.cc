#include "typing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "load.h"
#include "testing/typed_dump_testutil.h"
#include "typing_report.h"

namespace libdump::typing {
namespace {

constexpr uint64_t kHolder = 0x100;  // a typed class: {tree header at +8, string triple at +40, ptr at +64}

using Words = std::vector<uint64_t>;

// A dump written by hand (addresses in a heap at 0x10000):
//   H  0x10000 Holder (96 B): +8 an rb-tree header {color, root, leftmost,
//      rightmost}, +40 a string triple {S, 20, 20}, +64 -> X
//   T1 0x11000 (48 B) the tree's root: parent = H+8, children T2, T3
//   T2 0x11100, T3 0x11200 (48 B) leaves, parent T1
//   S  0x12000 (32 B) "twenty characters..." NUL at 20
//   X  0x13000 (16 B) held by H at +64; holds Y at +0
//   Y  0x13100 (16 B) holds Z at +0; Z 0x13200 (16 B) holds nothing
//   W  0x14000 (48 B) untyped, unreachable
// Roots: a data root to H.
void WriteDump(const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  format::OstreamSink sink(f);
  format::Writer w(sink);
  w.Header();
  w.Params({0, 8, 0, 0x10000, 0x20000});
  auto obj = [&](uint64_t addr, uint64_t type, Words words) {
    w.Object({addr, type, format::kObjRegular, words.size() * 8}, words.data());
  };
  obj(0x10000, kHolder, {0, /*header*/ 0, 0x11000, 0x11100, 0x11200, /*string*/ 0x12000, 20, 20, /*X*/ 0x13000, 0, 0, 0});
  obj(0x11000, 0, {1, 0x10008, 0x11100, 0x11200, 7, 0});
  obj(0x11100, 0, {0, 0x11000, 0, 0, 8, 0});
  obj(0x11200, 0, {0, 0x11000, 0, 0, 9, 0});
  Words s(4, 0);
  std::memcpy(s.data(), "twenty characters!!!", 20);  // bytes 20..31 stay 0
  obj(0x12000, 0, s);
  obj(0x13000, 0, {0x13100, 0});
  obj(0x13100, 0, {0x13200, 0});
  obj(0x13200, 0, {0, 0});
  obj(0x14000, 0, Words(6, 0x5555));
  w.Type({kHolder, 96, "Holder", false, {{format::kFieldPtr, 16}, {format::kFieldPtr, 40}, {format::kFieldPtr, 64}}});
  w.DataRoot({0x600000, 0x10000});
  w.Eof();
  w.Flush();
}

class TypingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "typing_test_" + std::to_string(getpid()) + ".dump";
    WriteDump(path_);
  }
  void TearDown() override { unlink(path_.c_str()); }

  std::map<uint64_t, std::string> Classes(const Options& o = {}) { return ClassesOf(path_, o); }

  std::string path_;
};

TEST_F(TypingTest, ShapesHoldersAndSizes) {
  const auto c = Classes();
  EXPECT_EQ(c.at(0x10000), "Holder");
  EXPECT_EQ(c.at(0x11000), "std::map node");
  EXPECT_EQ(c.at(0x11100), "std::map node");
  EXPECT_EQ(c.at(0x11200), "std::map node");
  EXPECT_EQ(c.at(0x12000), "std::string buffer (held by Holder +0x28)");
  EXPECT_EQ(c.at(0x13000), "(held by Holder +0x40)");
  // What X holds, Y, and what Y holds, Z: one class for Holder's member at +0x40.
  EXPECT_EQ(c.at(0x13100), "(held by Holder +0x40 +\u2026)");
  EXPECT_EQ(c.at(0x13200), "(held by Holder +0x40 +\u2026)");
  EXPECT_EQ(c.at(0x14000), "(untyped 48 B)");
}

TEST_F(TypingTest, NoTypingKeepsTheDumpsClasses) {
  Options o;
  o.enabled = false;
  const auto c = Classes(o);
  EXPECT_EQ(c.at(0x10000), "Holder");
  EXPECT_EQ(c.at(0x11000), "(untyped)");
  EXPECT_EQ(c.at(0x14000), "(untyped)");
}

TEST_F(TypingTest, DeterministicAndMeasured) {
  EXPECT_EQ(Classes(), Classes());
  heapgraph::HeapGraph g;
  heapgraph::Load(path_, g);
  const Stats s = Type(g, {});
  EXPECT_EQ(s.total_objects, 9u);
  EXPECT_EQ(s.objects[static_cast<int>(Rule::kDump)], 1u);
  EXPECT_EQ(s.objects[static_cast<int>(Rule::kShape)], 4u);
  EXPECT_EQ(s.objects[static_cast<int>(Rule::kHolder)], 3u);
  EXPECT_EQ(s.objects[static_cast<int>(Rule::kSize)], 1u);
  EXPECT_EQ(s.objects[0], 0u);
  EXPECT_EQ(s.bytes[static_cast<int>(Rule::kSize)], 48u);
}

TEST_F(TypingTest, AWeakerRuleNeverOverridesAStrongerOne) {
  heapgraph::HeapGraph g;
  heapgraph::Load(path_, g);
  Options o;
  Context ctx(g, o);
  const Index h = g.Find(0x10000), x = g.Find(0x13000);
  const uint32_t dwarf = ctx.Class("Foo", Rule::kDwarf);
  const uint32_t shape = ctx.Class("std::vector body", Rule::kShape);
  EXPECT_FALSE(ctx.Name(h, dwarf, Rule::kDwarf));  // the dump named it
  EXPECT_TRUE(ctx.Name(x, shape, Rule::kShape));
  EXPECT_FALSE(ctx.Name(x, shape, Rule::kShape));     // as strong: the first proof stays
  EXPECT_FALSE(ctx.Name(x, shape, Rule::kHolder));    // weaker
  EXPECT_TRUE(ctx.Name(x, dwarf, Rule::kDwarf, 3));   // stronger
  EXPECT_EQ(g.ClassName(x), "Foo");
  EXPECT_EQ(g.elements.at(x), 3u);
  EXPECT_EQ(ctx.RuleOf(x), Rule::kDwarf);
  EXPECT_EQ(ctx.Class("Foo", Rule::kShape), dwarf);  // found by name
}

TEST_F(TypingTest, ScanReadsPayloadsInFileOrder) {
  heapgraph::HeapGraph g;
  heapgraph::Load(path_, g);
  Options o;
  Context ctx(g, o);
  std::vector<Index> seen;
  const std::vector<Index> some = {g.Find(0x11000), g.Find(0x13100)};
  ctx.Scan(some, [&](Index i, std::span<const uint8_t> d) {
    seen.push_back(i);
    if (i == some[1]) {
      EXPECT_EQ(ctx.Word(d, 0), 0x13200u);
    }
  });
  EXPECT_EQ(seen, some);
  uint64_t n = 0;
  ctx.ScanAll([&](Index, std::span<const uint8_t>) { ++n; });
  EXPECT_EQ(n, g.size());
}

TEST_F(TypingTest, LeaksAreTheUnreachableObjects) {
  heapgraph::HeapGraph g;
  typing::Open(path_, g, Options{});
  const Leaks l = FindLeaks(g);
  EXPECT_EQ(l.objects, 1u);
  EXPECT_EQ(l.bytes, 48u);
  ASSERT_EQ(l.clusters.size(), 1u);
  EXPECT_EQ(g.ids[l.clusters[0].entry], 0x14000u);
}

// fuzz/seeds/typing/shapes, typing_fuzz's seed, is this dump:
// TYPING_SEED_OUT=PATH writes it again.
TEST_F(TypingTest, FuzzSeedIsThisDump) {
  if (const char* out = getenv("TYPING_SEED_OUT")) WriteDump(out);
  std::ifstream seed(TYPING_FUZZ_SEED, std::ios::binary), mine(path_, std::ios::binary);
  ASSERT_TRUE(seed.good()) << TYPING_FUZZ_SEED;
  const std::string a((std::istreambuf_iterator<char>(seed)), {}), b((std::istreambuf_iterator<char>(mine)), {});
  EXPECT_EQ(a, b) << "regenerate with TYPING_SEED_OUT=" << TYPING_FUZZ_SEED;
}

}  // namespace
}  // namespace libdump::typing
