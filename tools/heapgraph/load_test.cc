// Graphs built from files: an hprof of every record kind (the hprof reader's
// sample) and the damage a loader must report as one error.
#include "load.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "analyze.h"
#include "testing/hprof_reader_testutil.h"
#include "libdump/format/reader.h"
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

TEST(Load, MissingFile) {
  HeapGraph g;
  EXPECT_THROW(Open("/nonexistent/heap.dump", g), LoadError);
}

}  // namespace
}  // namespace libdump::heapgraph
