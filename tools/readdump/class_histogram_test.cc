#include "class_histogram.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace libdump::readdump {
namespace {

using heapgraph::HeapGraph;
using heapgraph::NamedBy;

uint32_t AddClass(HeapGraph& g, const std::string& name, uint64_t id, NamedBy by) {
  heapgraph::ClassInfo c;
  c.name = name;
  c.id = id;
  c.named_by = by;
  g.classes.push_back(c);
  return static_cast<uint32_t>(g.classes.size() - 1);
}

TEST(ClassHistogram, OneRowPerClassWithItsRule) {
  HeapGraph g;
  const uint32_t node = AddClass(g, "Node", 0x5000, NamedBy::kDump);
  const uint32_t map = AddClass(g, "std::map node", 0x77, NamedBy::kShape);
  AddClass(g, "Empty", 0x9, NamedBy::kDump);  // no instances: no row
  heapgraph::GraphBuilder b(g);
  b.AddObject(0x1000, node, 24, 0);
  b.AddObject(0x2000, map, 48, 0);
  b.AddObject(0x3000, map, 48, 0);
  b.FinishObjects();
  Histogram h;
  h.SetClasses(ClassRows(g));
  ASSERT_TRUE(h.typed());
  const auto rows = h.Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "std::map node");
  EXPECT_EQ(rows[0].rule, "shape");
  EXPECT_EQ(rows[0].count, 2u);
  EXPECT_EQ(rows[0].bytes, 96u);
  EXPECT_EQ(rows[0].type, 0u);  // not the dump's type: no type id
  EXPECT_EQ(rows[1].name, "Node");
  EXPECT_EQ(rows[1].rule, "dump");
  EXPECT_EQ(rows[1].type, 0x5000u);
  std::ostringstream out;
  PrintHistogram(out, h, 0);
  EXPECT_EQ(out.str(),
            "     count        bytes  type id            rule    class\n"
            "         2           96  0x0                shape   std::map node\n"
            "         1           24  0x5000             dump    Node\n"
            "         3          120  total, 2 classes\n");
}

}  // namespace
}  // namespace libdump::readdump
