#include "go_typing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "converter.h"
#include "go_dump_encoder_testutil.h"
#include "libdump/format/hprof_writer.h"
#include "testing/hprof_test_reader.h"

namespace libdump::dumptohprof {
namespace {

using format::Dialect;
using format::Field;
using format::kFieldPtr;
using format::testing::GoEncoder;
using godwarf::GoKind;
using godwarf::GoProgram;
using godwarf::GoType;
using godwarf::kNoType;

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

GoType Ty(std::string name, uint64_t size, GoKind kind, uint32_t elem = kNoType) {
  GoType t;
  t.name = std::move(name);
  t.size = size;
  t.kind = kind;
  t.elem = elem;
  return t;
}

constexpr uint64_t kGoData = 12;  // the tag of Go's data segment record
constexpr uint64_t kBoxDesc = 0x4b0000, kBoxPtrDesc = 0x4b0100, kItab = 0x600;

// A program as Go's DWARF describes it (go_types_test.cc gives the shapes):
//   type node struct { next *node; val int; tag interface{}; err error }  // 48 bytes
//   type alias struct { ... the same members ... }
//   type box struct { v int }
//   var head *node; var list []*node; var err error; var odd *node; var other *alias
//   func main() { var e error; var b *box ... }
struct Program {
  GoProgram p{8};
  Program(bool with_main = true) {
    const uint32_t i64 = p.Add(Ty("int", 8, GoKind::kInt));
    const uint32_t node_s = p.Add(Ty("main.node", 48, GoKind::kStruct));
    const uint32_t node = p.Add(Ty("main.node", 0, GoKind::kTypedef, node_s));
    const uint32_t pnode = p.Add(Ty("*main.node", 8, GoKind::kPointer, node));
    const uint32_t eface = p.Add(Ty("interface {}", 16, GoKind::kEface));
    const uint32_t iface = p.Add(Ty("error", 16, GoKind::kIface));
    const std::vector<godwarf::GoMember> members = {
        {"next", 0, pnode}, {"val", 8, i64}, {"tag", 16, eface}, {"err", 32, iface}};
    p.mutable_type(node_s).members = members;
    const uint32_t alias = p.Add(Ty("main.alias", 48, GoKind::kStruct));
    p.mutable_type(alias).members = members;
    const uint32_t palias = p.Add(Ty("*main.alias", 8, GoKind::kPointer, alias));
    const uint32_t box = p.Add(Ty("main.box", 8, GoKind::kStruct));
    p.mutable_type(box).members = {{"v", 0, i64}};
    const uint32_t pbox = p.Add(Ty("*main.box", 8, GoKind::kPointer, box));
    const uint32_t slice = p.Add(Ty("[]*main.node", 24, GoKind::kSlice, pnode));
    p.AddGlobal({"main.head", 0x7000, pnode});
    p.AddGlobal({"main.list", 0x7008, slice});
    p.AddGlobal({"main.err", 0x7020, iface});
    p.AddGlobal({"main.odd", 0x7030, pnode});
    p.AddGlobal({"main.other", 0x7038, palias});
    p.AddRuntimeType(kBoxDesc, box);
    p.AddRuntimeType(kBoxPtrDesc, pbox);
    if (with_main) p.AddFunction("main.main", 0x403000);
    // main.main's locals while the pc is in [0x403000, 0x403100): `e error`
    // at CFA-24, `b *main.box` at CFA-8.
    p.AddLocal(0x403000, 0x403000, 0x403100, -24, iface);
    p.AddLocal(0x403000, 0x403000, 0x403100, -8, pbox);
    p.Byte();
    p.Finish();
  }
};

// The dump such a program writes, every word hand-placed.
std::string Dump() {
  GoEncoder e(Dialect::kGo17);
  e.Params(0x1000, 0x9000);
  e.Type(kBoxDesc, 8, "main.box", true);
  e.Itab(kItab, kBoxDesc, true);
  // Go's bitmaps mark an interface's data word only: node pointers at 0, 24, 40.
  const std::vector<Field> node = {{kFieldPtr, 0}, {kFieldPtr, 24}, {kFieldPtr, 40}};
  // A: next B, val 1, tag = (*main.box)(0x1100), err nil
  e.Object(0x1000, GoEncoder::Words({0x1040, 1, kBoxPtrDesc, 0x1100, 0, 0}), node);
  // B: next nil, val 2, tag nil, err = error(main.box at 0x1110) through the itab
  e.Object(0x1040, GoEncoder::Words({0, 2, 0, 0, kItab, 0x1110}), node);
  e.Object(0x1100, GoEncoder::Words({7}), {});
  e.Object(0x1110, GoEncoder::Words({8}), {});
  // list's backing array: A, B, an interior pointer into A, nil
  e.Object(0x1200, GoEncoder::Words({0x1000, 0x1040, 0x1008, 0}),
           {{kFieldPtr, 0}, {kFieldPtr, 8}, {kFieldPtr, 16}, {kFieldPtr, 24}});
  // 16 bytes: smaller than a node
  e.Object(0x1300, GoEncoder::Words({0, 0x1000}), {{kFieldPtr, 8}});
  e.Object(0x1400, GoEncoder::Words({9}), {});  // reached only from main.main's b
  e.Object(0x1500, GoEncoder::Words({10}), {});  // reached only from main.main's e
  e.Goroutine(0x2000, 0x8000, 1, 2, "");
  // 24 bytes of frame at sp 0x8000 (its CFA 0x8018, pc 0x403010): e = error
  // (main.box at 0x1500) through the itab, b = 0x1400
  e.Frame(0x8000, 0, 0, GoEncoder::Words({kItab, 0x1500, 0x1400}), 0x403000, "main.main",
          {{kFieldPtr, 8}, {kFieldPtr, 16}});
  // data: head, list {array, len, cap}, err {tab, data}, odd, other
  e.Segment(kGoData, 0x7000, GoEncoder::Words({0x1000, 0x1200, 3, 4, kItab, 0x1110, 0x1300, 0x1000}),
            {{kFieldPtr, 0}, {kFieldPtr, 8}, {kFieldPtr, 40}, {kFieldPtr, 48}, {kFieldPtr, 56}});
  e.Eof();
  return e.bytes();
}

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

}  // namespace
}  // namespace libdump::dumptohprof
