#include "object_label.h"

#include <gtest/gtest.h>

#include "testing/graph_h.h"

namespace libdump::heapview {
namespace {

TEST(ObjectLabel, TextOfABufferAndCountOfAContainer) {
  testing::GraphH h;
  heapgraph::HeapGraph& g = h.g;
  // F (0x1500) is untyped, 64 bytes, "hello heapview" and zeros, no pointers.
  EXPECT_EQ(ShortLabel(g, g.Find(0x1500)), "\"hello heapview\"");
  // Nodes hold pointers: nothing short to say.
  EXPECT_EQ(ShortLabel(g, g.Find(0x1300)), "");
  // H (0x1700) has no references left: its bytes are not text.
  EXPECT_EQ(ShortLabel(g, g.Find(0x1700)), "");
  g.elements[g.Find(0x1300)] = 1234;
  EXPECT_EQ(ShortLabel(g, g.Find(0x1300)), "1,234 elements");
}

}  // namespace
}  // namespace libdump::heapview
