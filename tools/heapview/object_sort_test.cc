#include "object_sort.h"

#include <gtest/gtest.h>

#include "testing/small_heap.h"

namespace libdump::heapview {
namespace {

// Three top retainers: a Cache of 10 bytes holding a Buf of 90, a Buf of
// 40, a Node of 60 (retained 100, 40, 60).
heapgraph::HeapGraph Heap() {
  return heapgraph::testing::SmallHeap({"Cache", "Buf", "Node"}, {"global"},
                                       {{0, 10, {1}}, {1, 90, {}}, {1, 40, {}}, {2, 60, {}}},
                                       {{0, 0}, {2, 0}, {3, 0}});
}

std::vector<heapgraph::Index> Sorted(const char* target, std::string_view filter = "") {
  const heapgraph::HeapGraph g = Heap();
  return SortObjects(g, g.top_retainers.span(), ParseSortOrder(ParseTarget(target), {"retained", "size", "class"}),
                     filter);
}

TEST(ObjectSort, EveryColumnBothWays) {
  using V = std::vector<heapgraph::Index>;
  EXPECT_EQ(Sorted("/d"), (V{0, 3, 2}));
  EXPECT_EQ(Sorted("/d?order=asc"), (V{2, 3, 0}));
  EXPECT_EQ(Sorted("/d?sort=size"), (V{3, 2, 0}));
  EXPECT_EQ(Sorted("/d?sort=size&order=asc"), (V{0, 2, 3}));
  EXPECT_EQ(Sorted("/d?sort=class"), (V{2, 0, 3}));  // Buf, Cache, Node
  EXPECT_EQ(Sorted("/d?sort=class&order=desc"), (V{3, 0, 2}));
}

TEST(ObjectSort, FilterByClassName) {
  using V = std::vector<heapgraph::Index>;
  EXPECT_EQ(Sorted("/d", "bu"), (V{2}));
  EXPECT_EQ(Sorted("/d", "*e"), (V{0, 3}));
  EXPECT_EQ(Sorted("/d", "nothing"), V{});
}

}  // namespace
}  // namespace libdump::heapview
