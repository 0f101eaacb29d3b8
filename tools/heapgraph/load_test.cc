// Graphs built from files: an hprof of every record kind (the hprof reader's
// sample) and the damage a loader must report as one error.
#include "load.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "analyze.h"
#include "testing/hprof_reader_testutil.h"
#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "object_detail.h"
#include "paths.h"

namespace libdump::heapgraph {
namespace {

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

std::vector<uint64_t> OutIds(const HeapGraph& g, uint64_t id) {
  std::vector<uint64_t> out;
  for (Index t : g.Out(g.Find(id))) out.push_back(g.ids[t]);
  return out;
}

TEST(LoadHprof, SampleFile) {
  const std::string path = WriteFile("load_test.hprof", format::hprof::testing::SampleHprof(64));
  HeapGraph g;
  Open(path, g);
  // Objects: the class object 200, two instances, an object array, a char[].
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(g.ClassName(g.Find(0x1000)), "Node");
  EXPECT_EQ(g.ClassName(g.Find(0x1030)), "char[]");
  EXPECT_EQ(g.ClassName(g.Find(200)), "java.lang.Class");
  // Sizes as VisualVM's: the class's instance size; arrays 16 + 4 + elements, to 8.
  EXPECT_EQ(g.Size(g.Find(0x1000)), 12u);
  EXPECT_EQ(g.Size(g.Find(0x1020)), 48u);
  EXPECT_EQ(g.Size(g.Find(0x1030)), 24u);
  EXPECT_EQ(OutIds(g, 0x1000), (std::vector<uint64_t>{0x1010}));
  EXPECT_EQ(OutIds(g, 0x1020), (std::vector<uint64_t>{0x1000, 0x1010}));
  EXPECT_EQ(OutIds(g, 200), (std::vector<uint64_t>{0x1000}));  // the static `next`
  // Roots: unknown 0x1000, JNI global 0x1010, Java frame 0x1000; the thread
  // object 500 is not dumped, so dropped.
  EXPECT_EQ(g.roots.size(), 3u);
  EXPECT_EQ(g.dropped_roots, 1u);
  ASSERT_EQ(g.threads.size(), 1u);
  EXPECT_EQ(g.threads[0].name, "main");
  EXPECT_EQ(g.threads[0].frames, (std::vector<std::string>{"Node.main:42"}));
  EXPECT_EQ(g.roots[2].label, "Node.main:42");
  // 0x1020 and 0x1030 are garbage; 0x1000 is a root holding 0x1010, itself a root.
  EXPECT_EQ(g.idom[g.Find(0x1020)], kNone);
  EXPECT_EQ(g.retained[g.Find(0x1000)], 12u);
  // Field values read again from the file.
  const ObjectDetail d = ReadObject(g, g.Find(0x1000));
  ASSERT_EQ(d.fields.size(), 2u);
  EXPECT_EQ(d.fields[0].name, "next");
  EXPECT_EQ(d.fields[0].value, "0x1010");
  EXPECT_EQ(d.fields[1].value, "5");
  EXPECT_EQ(ReadObject(g, g.Find(0x1030)).text, "hi");
  // The fields a path names: the class's static `next`, the instance field
  // `next`, element 2 of {0x1000, null, 0x1010}.
  EXPECT_EQ(FieldTo(g, g.Find(200), g.Find(0x1000)), "static next");
  EXPECT_EQ(FieldTo(g, g.Find(0x1000), g.Find(0x1010)), "next");
  EXPECT_EQ(FieldTo(g, g.Find(0x1020), g.Find(0x1010)), "[2]");
  EXPECT_EQ(FieldTo(g, g.Find(0x1020), g.Find(0x1000)), "[0]");
  EXPECT_EQ(FieldTo(g, g.Find(0x1010), g.Find(0x1000)), "");  // 0x1010.next is null
  unlink(path.c_str());
}

TEST(LoadHprof, DamageIsOneFormatError) {
  std::string bytes = format::hprof::testing::SampleHprof();
  const std::string path = WriteFile("load_test_cut.hprof", bytes.substr(0, bytes.size() - 12));
  HeapGraph g;
  try {
    Open(path, g);
    FAIL() << "no error";
  } catch (const format::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(": HEAP DUMP SEGMENT: length "), std::string::npos) << e.what();
  }
  unlink(path.c_str());
}

// A program's two objects and libdump's own two (one of them holding a
// pointer to the program's): own objects, their roots and the references
// out of them are left out, and counted; with include_own, they are in, one
// class per component, each a root of kind "libdump".
std::string WriteOwnDump(const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0);
  format::FdSink sink(fd);
  format::Writer w(sink);
  w.Header();
  w.Params({0, 8, 0, 0x1000, 0x2000});
  constexpr uint64_t kOwn = 0x900, kNode = 0x800;
  w.Type({kNode, 16, "Node", false, {{format::kFieldPtr, 0}}});
  w.Type({kOwn, 0, "libdump: dump writer", false, {}});
  w.TypeInfo({kOwn, format::kTypeOwn, 0, 0, 0});
  const uint64_t user1[2] = {0x1010, 0}, user2[2] = {0, 0};
  const uint64_t own1[4] = {0x1000, 0x1040, 0, 0}, own2[2] = {0, 0};
  w.Object({0x1000, kNode, format::kObjRegular, 16}, user1);
  w.Object({0x1010, kNode, format::kObjRegular, 16}, user2);
  w.Object({0x1020, kOwn, format::kObjRegular, 32}, own1);
  w.Object({0x1040, kOwn, format::kObjRegular, 16}, own2);
  w.DataRoot({0x600000, 0x1000});
  w.OtherRoot("libdump: the heap dump being written", 0x1020);
  w.OtherRoot("libdump: the heap dump being written", 0x1048);  // inside the second
  w.Eof();
  ::close(fd);
  EXPECT_FALSE(w.error());
  return path;
}

TEST(LoadDump, LibdumpsOwnMemoryIsLeftOutAndCounted) {
  const std::string path = WriteOwnDump("load_test_own.dump");
  HeapGraph g;
  Open(path, g);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g.own_objects, 2u);
  EXPECT_EQ(g.own_bytes, 48u);
  EXPECT_EQ(g.total_bytes, 32u);  // + own_bytes: every object of the file
  EXPECT_EQ(g.Find(0x1020), kNone);
  ASSERT_EQ(g.roots.size(), 1u);  // the data root; the own roots are not dropped ones
  EXPECT_EQ(g.dropped_roots, 0u);
  EXPECT_EQ(g.retained[g.Find(0x1000)], 32u);
  for (const ClassInfo& c : g.classes) EXPECT_FALSE(c.own) << c.name;
  unlink(path.c_str());
}

TEST(LoadDump, IncludeOwnShowsOneClassPerComponentEachObjectARoot) {
  const std::string path = WriteOwnDump("load_test_own_in.dump");
  HeapGraph g;
  g.include_own = true;
  Open(path, g);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g.own_objects, 2u);
  EXPECT_EQ(g.total_bytes, 80u);
  const Index own = g.Find(0x1020);
  ASSERT_NE(own, kNone);
  EXPECT_EQ(g.ClassName(own), "libdump: dump writer");
  EXPECT_TRUE(g.classes[g.cls[own]].own);
  EXPECT_EQ(g.Out(own).size(), 0u);  // holds nothing of the program's
  size_t own_roots = 0;
  for (const Root& r : g.roots) own_roots += g.root_kinds[r.kind] == "libdump";
  EXPECT_EQ(own_roots, 2u);
  EXPECT_EQ(g.idom[own], kSuperRoot);
  EXPECT_EQ(g.retained[g.Find(0x1000)], 32u);  // the own pointer to it does not retain it
  unlink(path.c_str());
}

TEST(Load, MissingFile) {
  HeapGraph g;
  EXPECT_THROW(Open("/nonexistent/heap.dump", g), LoadError);
}

}  // namespace
}  // namespace libdump::heapgraph
