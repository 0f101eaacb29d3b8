#include "go_typing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "converter.h"
#include "testing/go_typing_testutil.h"
#include "libdump/format/hprof_writer.h"
#include "testing/hprof_test_reader.h"

namespace libdump::dumptohprof {
namespace {

using godwarf::GoProgram;
using godwarf::kNoType;
using testing::Dialect;
using testing::Dump;
using testing::GoEncoder;
using testing::kFieldPtr;
using testing::kGoData;
using testing::Program;

class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    char name[] = "/tmp/go_typing_testXXXXXX";
    const int fd = ::mkstemp(name);
    ::close(fd);
    path_ = name;
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

GoTypes Type(const std::string& path, const GoProgram& p) {
  auto reader = format::Reader::Open(path);
  DumpCatalog catalog;
  catalog.Scan(*reader, [](uint64_t) {});
  return TypeGoObjects(path, catalog, p);
}

std::string TypeOf(const GoTypes& g, const GoProgram& p, size_t position) {
  const GoTyping& t = g.typings[g.of_object.at(position)];
  if (t.type == kNoType) return "-";
  return (t.elements ? "[]" : "") + p.type(t.type).name;
}

TEST(GoTyping, FollowsTypedPointersFromGlobals) {
  const TempFile f(Dump());
  const Program prog;
  const GoTypes g = Type(f.path(), prog.p);
  // Positions in address order: 0x1000, 0x1040, 0x1100, 0x1110, 0x1200, 0x1300, 0x1400, 0x1500.
  EXPECT_EQ(TypeOf(g, prog.p, 0), "main.node");     // head
  EXPECT_EQ(TypeOf(g, prog.p, 1), "main.node");     // A.next
  EXPECT_EQ(TypeOf(g, prog.p, 2), "main.box");      // A.tag: a *main.box is stored in the word itself
  EXPECT_EQ(TypeOf(g, prog.p, 3), "main.box");      // B.err and err: a main.box the data word points to
  EXPECT_EQ(TypeOf(g, prog.p, 4), "[]*main.node");  // list's backing array
  EXPECT_EQ(TypeOf(g, prog.p, 5), "-");             // odd: 16 bytes cannot hold a node
  EXPECT_EQ(TypeOf(g, prog.p, 6), "main.box");      // main.main's local b
  EXPECT_EQ(TypeOf(g, prog.p, 7), "main.box");      // main.main's local e, through its itab
  const GoTypingStats& s = g.stats;
  EXPECT_EQ(s.objects, 8u);
  EXPECT_EQ(s.bytes, 48u + 48 + 8 + 8 + 32 + 16 + 8 + 8);
  EXPECT_EQ(s.typed_objects, 7u);
  EXPECT_EQ(s.typed_bytes, 48u + 48 + 8 + 8 + 32 + 8 + 8);
  EXPECT_EQ(s.roots_in_globals, 5u);
  EXPECT_EQ(s.roots_in_locals, 2u);
  EXPECT_EQ(s.interior, 1u);    // the array's 0x1008
  EXPECT_EQ(s.mismatched, 1u);  // odd
  EXPECT_EQ(s.conflicts, 1u);   // other: A is a main.node already
}

TEST(GoTyping, TheDumpsLayoutMustAgreeWithTheType) {
  // B's pointer at 8 (val) is no pointer of main.node: B stays untyped, and
  // so does what only B reaches.
  GoEncoder e(Dialect::kGo17);
  e.Params(0x1000, 0x9000);
  e.Object(0x1000, GoEncoder::Words({0x1040, 1, 0, 0, 0, 0}), {{kFieldPtr, 0}});
  e.Object(0x1040, GoEncoder::Words({0, 0x1100, 0, 0, 0, 0}), {{kFieldPtr, 8}});
  e.Object(0x1100, GoEncoder::Words({1, 2, 3, 4, 5, 6}), {});
  e.Segment(kGoData, 0x7000, GoEncoder::Words({0x1000}), {{kFieldPtr, 0}});
  e.Eof();
  const TempFile f(e.bytes());
  const Program prog;
  const GoTypes g = Type(f.path(), prog.p);
  EXPECT_EQ(TypeOf(g, prog.p, 0), "main.node");
  EXPECT_EQ(TypeOf(g, prog.p, 1), "-");
  EXPECT_EQ(TypeOf(g, prog.p, 2), "-");
  EXPECT_EQ(g.stats.mismatched, 1u);
}

TEST(GoTyping, ABinaryThatDidNotWriteTheDumpIsRefused) {
  const TempFile f(Dump());
  const Program other(false);  // no main.main at the frame's entry
  try {
    Type(f.path(), other.p);
    FAIL() << "no BinaryMismatch";
  } catch (const BinaryMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("function main.main starts at 0x403000 in the dump, and the binary has no such"),
              std::string::npos)
        << e.what();
  }
}

TEST(GoTyping, ConvertedClassesCarryGoNamesAndFields) {
  const TempFile f(Dump());
  const Program prog;
  ConvertOptions o;
  o.program = &prog.p;
  format::hprof::StringOutput out;
  const ConvertStats s = Convert(f.path(), out, o);
  EXPECT_TRUE(s.go_typed);
  EXPECT_EQ(s.go.typed_objects, 7u);
  std::ostringstream map;
  WriteClassMap(map, s);
  const std::string m = map.str();
  EXPECT_NE(m.find("\tmain.node\t2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\tmain.box\t4\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\t*main.node[]\t1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\tobj16[8]\t1\n"), std::string::npos) << m;  // odd keeps its layout's name
  std::set<std::string> names;
  for (const auto& r : format::hprof::testing::TopRecords(out.data())) {
    if (r.tag == 0x01) names.insert(r.body.substr(8));
  }
  for (const char* n : {"next", "val", "tag._type", "tag.data", "err.tab", "err.data", "v"}) {
    EXPECT_TRUE(names.contains(n)) << n;
  }
}

// go_typing_fuzz starts from this dump: its seed must stay the test's dump.
// LIBDUMP_WRITE_FUZZ_SEED=1 rewrites the seed after a change to Dump().
TEST(GoTyping, TheFuzzSeedIsThisDump) {
  if (std::getenv("LIBDUMP_WRITE_FUZZ_SEED") != nullptr) {
    std::ofstream(GO_TYPING_FUZZ_SEED, std::ios::binary) << Dump();
  }
  std::ifstream in(GO_TYPING_FUZZ_SEED, std::ios::binary);
  ASSERT_TRUE(in) << GO_TYPING_FUZZ_SEED;
  std::ostringstream seed;
  seed << in.rdbuf();
  EXPECT_EQ(seed.str(), Dump());
}

}  // namespace
}  // namespace libdump::dumptohprof
