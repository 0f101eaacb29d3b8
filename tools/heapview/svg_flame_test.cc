#include "svg_flame.h"

#include <gtest/gtest.h>

#include "testing/graph_h.h"
#include "testing/markup.h"

namespace libdump::heapview {
namespace {

// Graph H by hand: of 224 reachable bytes, the global root's G retains 96
// (Nodes only), the Node D both roots reach 88 (F, the untyped block named
// by its holder, 64), the registry's C 40 (E, the class
// <script>alert(1)</script>, 16).
TEST(SvgFlame, WidthsAreRetainedBytesAndNamesAreEscaped) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  const std::string svg = FlameSvg(heapgraph::BuildFlame(g), g, 1120);
  EXPECT_EQ(testing::MarkupProblem(svg), "");
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  // 1120 pixels for 224 bytes: 5 a byte; each rect half a pixel narrower than its share.
  EXPECT_NE(svg.find("<a href=\"/dominators\"><rect x=\"0\" y=\"0\" width=\"1119.5\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<a href=\"/roots\"><rect x=\"0\" y=\"18\" width=\"479.5\""), std::string::npos);
  EXPECT_NE(svg.find("<a href=\"/object/0x1600\"><rect x=\"0\" y=\"36\" width=\"479.5\""), std::string::npos);
  EXPECT_NE(svg.find("<a href=\"/object/0x1300\"><rect x=\"480\" y=\"36\" width=\"439.5\""), std::string::npos);
  EXPECT_NE(svg.find("<a href=\"/object/0x1500\"><rect x=\"480\" y=\"54\" width=\"319.5\""), std::string::npos);
  EXPECT_NE(svg.find("<a href=\"/object/0x1400\"><rect x=\"920\" y=\"54\" width=\"79.5\""), std::string::npos);
  EXPECT_NE(svg.find("<title>&lt;script&gt;alert(1)&lt;/script&gt;: 16 bytes (7.1%, 16 B) in 1 object</title>"),
            std::string::npos);
}

TEST(SvgFlame, FramesUnderAPixelAreDrawnTogether) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  // 20 pixels: 11.2 bytes a pixel. Under the registry's Node (40 bytes, 3.6
  // px) E's 16 bytes are 1.4 px and stay; at 3 pixels nothing under "all" is.
  std::string svg = FlameSvg(heapgraph::BuildFlame(g), g, 20);
  EXPECT_NE(svg.find("/object/0x1400"), std::string::npos);
  svg = FlameSvg(heapgraph::BuildFlame(g), g, 1.5);
  EXPECT_EQ(svg.find("/roots"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>(3 smaller): 224 bytes (100.0%)</title>"), std::string::npos) << svg;
}

TEST(SvgFlame, FoldedStacksOfGraphH) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  EXPECT_EQ(FoldedResponse(heapgraph::BuildFlame(g)).body,
            "global;Node 96\n"
            "several roots;Node 24\n"
            "several roots;Node;(untyped) 64\n"
            "other;Node 24\n"
            "other;Node;<script>alert(1)</script> 16\n");
  EXPECT_EQ(FoldedResponse(heapgraph::BuildFlame(g)).content_type, "text/plain; charset=utf-8");
}

}  // namespace
}  // namespace libdump::heapview
