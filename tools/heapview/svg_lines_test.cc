#include "svg_lines.h"

#include <gtest/gtest.h>

#include "testing/graph_h.h"
#include "testing/markup.h"

namespace libdump::heapview {
namespace {

heapgraph::SeriesClass Class(const std::string& name, std::vector<uint64_t> bytes, bool grows) {
  heapgraph::SeriesClass c;
  c.name = name;
  c.bytes = std::move(bytes);
  c.count = c.retained = c.bytes;
  c.grows = grows;
  return c;
}

// Three dumps: app::Session 100 -> 200 -> 300 bytes, a hostile name
// 0 -> 50 -> 400, a class that shrinks (not drawn), and G of graph H as the
// accumulation point, retaining 96 -> 500 -> 900. The plot's top is 900
// bytes at y 16, its bottom 0 at y 316; the dumps at x 80, 390, 700.
TEST(SvgLines, GrowingClassesAndThePointsRetained) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  heapgraph::Growth gr;
  gr.files = {"a", "b", "c"};
  gr.classes = {Class("app::Session", {100, 200, 300}, true), Class("<b>\"&'", {0, 50, 400}, true),
                Class("Shrinks", {900, 10, 5}, false)};
  heapgraph::AccumulationPoint p;
  p.object = g.Find(0x1600);
  p.retained = {96, 500, 900};
  gr.points = {p};
  const std::string svg = GrowthPlot(gr, g);
  EXPECT_EQ(testing::MarkupProblem(svg), "");
  EXPECT_NE(svg.find("<polyline points=\"80,282.7 390,249.3 700,216\" fill=\"none\" stroke=\"#1f77b4\" "
                     "stroke-width=\"2\"><title>app::Session, bytes per dump: 100 200 300</title></polyline>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>&lt;b&gt;&quot;&amp;&#39;, bytes per dump: 0 50 400</title>"), std::string::npos);
  EXPECT_NE(svg.find("<polyline points=\"80,284 390,149.3 700,16\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2\" "
                     "stroke-dasharray=\"6 3\"><title>point Node@0x1600 (accumulation point), retained per dump: 96 "
                     "500 900</title>"),
            std::string::npos);
  // The point is marked at the newest dump.
  EXPECT_NE(svg.find("<circle cx=\"700\" cy=\"16\" r=\"5\""), std::string::npos);
  EXPECT_EQ(svg.find("Shrinks"), std::string::npos);
  EXPECT_NE(svg.find(">900 B</text>"), std::string::npos);
  EXPECT_NE(svg.find(">450 B</text>"), std::string::npos);
}

TEST(SvgLines, NothingGrowsNothingDrawn) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  heapgraph::Growth gr;
  gr.files = {"a", "b"};
  gr.classes = {Class("Shrinks", {900, 10}, false)};
  EXPECT_EQ(GrowthPlot(gr, g), "");
}

}  // namespace
}  // namespace libdump::heapview
