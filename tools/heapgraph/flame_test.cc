#include "flame.h"

#include <gtest/gtest.h>

#include <sstream>

#include "testing/small_heap.h"

namespace libdump::heapgraph {
namespace {

// Worked out by hand: a global Cache (100 bytes) holds a list of three
// Nodes (10 each) ending in a Str (5) and a Buf (50); a stack root holds a
// Str (20); a Buf (30) is held by the Cache and by the stack's Str, so only
// the roots together dominate it; a Str (7) is unreachable.
HeapGraph Heap() {
  return testing::SmallHeap({"Cache", "Node", "Str", "Buf"}, {"global", "stack"},
                            {{0, 100, {1, 5, 7}}, {1, 10, {2}}, {1, 10, {3}}, {1, 10, {4}}, {2, 5, {}}, {3, 50, {}},
                             {2, 20, {7}}, {3, 30, {}}, {2, 7, {}}},
                            {{0, 0}, {6, 1}});
}

std::string Folded(const FlameTree& t) {
  std::ostringstream out;
  WriteFolded(out, t);
  return out.str();
}

TEST(Flame, FramesByRootKindThenClassAlongTheDominatorTree) {
  const HeapGraph g = Heap();
  ASSERT_EQ(g.reachable_bytes, 235u);
  const FlameTree t = BuildFlame(g);
  EXPECT_EQ(t.frames[0].bytes, 235u);
  // The three Nodes are one frame: each Node after the first is in its
  // dominator's class.
  EXPECT_EQ(Folded(t),
            "global;Cache 100\n"
            "global;Cache;Buf 50\n"
            "global;Cache;Node 30\n"
            "global;Cache;Node;Str 5\n"
            "several roots;Buf 30\n"
            "stack;Str 20\n");
  // all; global, Cache, Node, Str, Buf; stack, Str; several roots, Buf.
  ASSERT_EQ(t.frames.size(), 10u);
  const FlameFrame& global = t.frames[t.frames[0].children[0]];
  EXPECT_EQ(global.name, "global");
  EXPECT_EQ(global.bytes, 185u);
  const FlameFrame& cache = t.frames[global.children[0]];
  EXPECT_EQ(cache.objects, 1u);
  EXPECT_EQ(cache.largest, 0u);
  EXPECT_EQ(t.self(global.children[0]), 100u);
  const FlameFrame& node = t.frames[cache.children[1]];
  EXPECT_EQ(node.name, "Node");
  EXPECT_EQ(node.bytes, 35u);
  EXPECT_EQ(node.objects, 1u);  // the list's head enters; its tail stays in the frame
  EXPECT_EQ(node.depth, 3u);
}

TEST(Flame, DeepFramesStayInTheirAncestor) {
  FlameLimits l;
  l.max_depth = 2;  // root kinds and their first class
  EXPECT_EQ(Folded(BuildFlame(Heap(), l)), "global;Cache 185\nseveral roots;Buf 30\nstack;Str 20\n");
}

TEST(Flame, FramesPastTheLimitStayInTheirParent) {
  FlameLimits l;
  // all, global, Cache and the first class under it, Node (its Str stays in
  // it); root kinds are always frames, their classes no longer.
  l.max_frames = 4;
  EXPECT_EQ(Folded(BuildFlame(Heap(), l)), "global;Cache 150\nglobal;Cache;Node 35\nseveral roots 30\nstack 20\n");
}

TEST(Flame, FoldedNamesCannotSplitALine) {
  EXPECT_EQ(FoldedName("std::map<int; int>\nx\ty"), "std::map<int: int> x y");
}

}  // namespace
}  // namespace libdump::heapgraph
