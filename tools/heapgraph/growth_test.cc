// AnalyzeGrowth on hand-built series whose answers are worked out in the
// comments: identity by address, size and class; accumulation points pass
// down to the survivor that carries most of the growth.
#include "growth.h"

#include <gtest/gtest.h>

#include "analyze.h"

namespace libdump::heapgraph {
namespace {

struct Obj {
  uint64_t id;
  std::string cls;
  uint64_t size;
  std::vector<uint64_t> refs;  // ids
};

// A dump of these objects (in id order); the first one is the only root.
HeapGraph Dump(const std::vector<Obj>& objs) {
  HeapGraph g;
  std::map<std::string, uint32_t> cls;
  for (const Obj& o : objs) {
    if (cls.try_emplace(o.cls, static_cast<uint32_t>(g.classes.size())).second) {
      g.classes.emplace_back();
      g.classes.back().name = o.cls;
    }
  }
  GraphBuilder b(g);
  for (size_t i = 0; i < objs.size(); ++i) b.AddObject(objs[i].id, cls[objs[i].cls], objs[i].size, i);
  b.FinishObjects();
  for (Index i = 0; i < objs.size(); ++i) {
    b.BeginEdges(i);
    for (uint64_t r : objs[i].refs) b.Edge(g.Find(r));
  }
  b.FinishEdges();
  g.root_kinds = {"test"};
  g.roots.push_back(Root{.object = 0});
  Analyze(g);
  return g;
}

Growth Analyze3(const HeapGraph& a, const HeapGraph& b, const HeapGraph& c) { return AnalyzeGrowth({&a, &b, &c}); }

// H holds a list it prepends one Item to at each step: H's only dominated
// child is the new head, never a survivor, so H is where growth accumulates,
// grown by the two Items the first dump did not have.
TEST(Growth, PrependedListAccumulatesInItsHolder) {
  const HeapGraph d1 = Dump({{0x100, "H", 32, {0x200}}, {0x200, "Item", 100, {}}});
  const HeapGraph d2 = Dump({{0x100, "H", 32, {0x300}}, {0x200, "Item", 100, {}}, {0x300, "Item", 100, {0x200}}});
  const HeapGraph d3 = Dump({{0x100, "H", 32, {0x400}},
                             {0x200, "Item", 100, {}},
                             {0x300, "Item", 100, {0x200}},
                             {0x400, "Item", 100, {0x300}}});
  const Growth gr = Analyze3(d1, d2, d3);
  ASSERT_FALSE(gr.classes.empty());
  EXPECT_EQ(gr.classes[0].name, "Item");
  EXPECT_TRUE(gr.classes[0].grows);
  EXPECT_EQ(gr.classes[0].count, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(gr.classes[0].bytes_growth(), 200);
  EXPECT_TRUE(gr.by_object);
  EXPECT_EQ(gr.survived_objects, 2u);  // H and the first Item
  ASSERT_EQ(gr.steps.size(), 2u);
  EXPECT_EQ(gr.steps[0].new_objects, 1u);
  EXPECT_EQ(gr.steps[0].freed_objects, 0u);
  ASSERT_EQ(gr.points.size(), 1u);
  EXPECT_EQ(d3.ClassName(gr.points[0].object), "H");
  EXPECT_EQ(gr.points[0].retained, (std::vector<uint64_t>{132, 232, 332}));
  EXPECT_EQ(gr.points[0].growth, 200);
  ASSERT_EQ(gr.points[0].grown_by.size(), 1u);
  EXPECT_EQ(gr.points[0].grown_by[0].name, "Item");
  EXPECT_EQ(gr.points[0].grown_by[0].count, 2u);
  EXPECT_EQ(gr.points[0].grown_by[0].bytes, 200u);
  EXPECT_EQ(LargestGrowth(gr)->name, "Item");
}

// H -> L -> items appended: L survives and carries all of H's growth, so
// the point passes down from H to L.
TEST(Growth, PointPassesDownToTheSurvivorCarryingTheGrowth) {
  const HeapGraph d1 = Dump({{0x100, "H", 8, {0x200}}, {0x200, "L", 16, {0x300}}, {0x300, "Item", 50, {}}});
  const HeapGraph d2 =
      Dump({{0x100, "H", 8, {0x200}}, {0x200, "L", 16, {0x300, 0x400}}, {0x300, "Item", 50, {}}, {0x400, "Item", 50, {}}});
  const HeapGraph d3 = Dump({{0x100, "H", 8, {0x200}},
                             {0x200, "L", 16, {0x300, 0x400, 0x500}},
                             {0x300, "Item", 50, {}},
                             {0x400, "Item", 50, {}},
                             {0x500, "Item", 50, {}}});
  const Growth gr = Analyze3(d1, d2, d3);
  ASSERT_EQ(gr.points.size(), 1u);
  EXPECT_EQ(d3.ClassName(gr.points[0].object), "L");
  EXPECT_EQ(gr.points[0].growth, 100);
}

// The same address with another size or class is another object; a series
// that does not change has no growing class and no point.
TEST(Growth, IdentityIsAddressSizeAndClass) {
  const HeapGraph d1 = Dump({{0x100, "H", 8, {0x200}}, {0x200, "A", 64, {}}});
  const HeapGraph d2 = Dump({{0x100, "H", 8, {0x200}}, {0x200, "A", 32, {}}});
  const HeapGraph d3 = Dump({{0x100, "H", 8, {0x200}}, {0x200, "B", 32, {}}});
  const Growth gr = Analyze3(d1, d2, d3);
  EXPECT_EQ(gr.survived_objects, 1u);  // H only
  EXPECT_EQ(gr.steps[0].new_objects, 1u);
  EXPECT_EQ(gr.steps[0].freed_objects, 1u);
  EXPECT_EQ(gr.steps[1].new_objects, 1u);
  for (const SeriesClass& c : gr.classes) EXPECT_FALSE(c.grows) << c.name;
  EXPECT_TRUE(gr.points.empty());
  ASSERT_NE(LargestGrowth(gr), nullptr);
  EXPECT_EQ(LargestGrowth(gr)->name, "B");  // 0, 0, 32 bytes: grew, but not at every step

  const Growth same = Analyze3(d1, d1, d1);
  EXPECT_TRUE(same.classes.empty());
  EXPECT_EQ(LargestGrowth(same), nullptr);
  EXPECT_EQ(same.survived_objects, 2u);
  EXPECT_TRUE(same.points.empty());
}

// A class up then down is not "grows"; an hprof in the series turns object
// identity off (its ids are not stable across dumps).
TEST(Growth, TrendAndHprof) {
  const HeapGraph d1 = Dump({{0x100, "H", 8, {}}});
  const HeapGraph d2 = Dump({{0x100, "H", 8, {0x200}}, {0x200, "A", 64, {}}});
  HeapGraph d3 = Dump({{0x100, "H", 8, {0x200}}, {0x200, "A", 32, {}}});
  Growth gr = Analyze3(d1, d2, d3);
  ASSERT_EQ(gr.classes.size(), 2u);  // A, and H whose retained size changed
  EXPECT_EQ(gr.classes[0].name, "A");  // the larger change first
  EXPECT_FALSE(gr.classes[0].grows);
  EXPECT_EQ(gr.classes[0].bytes, (std::vector<uint64_t>{0, 64, 32}));
  EXPECT_EQ(gr.classes[1].name, "H");
  EXPECT_EQ(gr.classes[1].retained, (std::vector<uint64_t>{8, 72, 40}));
  d3.source = Source::kHprof;
  gr = Analyze3(d1, d2, d3);
  EXPECT_FALSE(gr.by_object);
  EXPECT_TRUE(gr.points.empty());
  EXPECT_EQ(gr.classes.size(), 2u);
}

}  // namespace
}  // namespace libdump::heapgraph
