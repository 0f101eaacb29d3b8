#include "svg_bars.h"

#include <gtest/gtest.h>

#include "testing/graph_h.h"
#include "testing/markup.h"

namespace libdump::heapview {
namespace {

// Graph H's top retainers: G (0x1600, the data root) 96 bytes, D (0x1300,
// reached from both roots) 88, C (0x1200, the registry root) 40, of 224.
TEST(SvgBars, TopRetainersWithTheirRootsAndShares) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  const std::string svg = RetainerBars(g);
  EXPECT_EQ(testing::MarkupProblem(svg), "");
  EXPECT_NE(svg.find(">Node@0x1600 \u2190 global slot 0x9000</text><a href=\"/object/0x1600\"><rect x=\"420\" y=\"25\" "
                     "width=\"360\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>Node@0x1300 \u2190 several roots: retains 88 bytes, 39.3%</title>"), std::string::npos);
  EXPECT_NE(svg.find(">96 B (42.9%)</text>"), std::string::npos);
  // 88 / 96 of the longest bar's 360 pixels.
  EXPECT_NE(svg.find("<a href=\"/object/0x1300\"><rect x=\"420\" y=\"47\" width=\"330\""), std::string::npos);
  EXPECT_NE(svg.find(">Node@0x1200 \u2190 other registry</text>"), std::string::npos);
  EXPECT_EQ(svg.find("smaller retainers"), std::string::npos);
}

TEST(SvgBars, TheRestIsOneBar) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  const std::string svg = RetainerBars(g, 1);
  // The scale is G's 96 bytes: the rest's 128 are cut at the full width.
  EXPECT_NE(svg.find(">2 smaller retainers, 128 B</text><a href=\"/dominators?page=0\"><rect x=\"420\" y=\"47\" "
                     "width=\"360\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<a href=\"/object/0x1600\"><rect x=\"420\" y=\"25\" width=\"360\""), std::string::npos);
  EXPECT_NE(svg.find("(128 bytes), the bar cut at the largest&#39;s width</title>"), std::string::npos);
  EXPECT_EQ(svg.find("0x1300"), std::string::npos);
}

TEST(SvgBars, TypedBarByRuleWithHostileNamesEscaped) {
  typing::Stats st;
  st.objects[1] = 8, st.bytes[1] = 184;  // graph H: the dump names 184 bytes,
  st.objects[4] = 1, st.bytes[4] = 64;   // its holder the untyped F's 64
  st.total_objects = 9, st.total_bytes = 248;
  const std::string svg = TypedBar(st);
  EXPECT_EQ(testing::MarkupProblem(svg), "");
  EXPECT_NE(svg.find("<rect x=\"0\" y=\"0\" width=\"712.3\" height=\"24\" fill=\"#3a7\"><title>dump: 8 objects, 184 "
                     "bytes (74.2%)</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<rect x=\"712.3\" y=\"0\" width=\"247.7\""), std::string::npos);
  EXPECT_NE(svg.find(">holder 25.8%</text>"), std::string::npos);
  EXPECT_EQ(svg.find("dwarf"), std::string::npos);  // no bytes: no segment
}

TEST(SvgBars, SummaryPicturesOfGraphH) {
  const testing::GraphH h;
  const heapgraph::HeapGraph& g = h.g;
  const std::string html = SummaryPictures(g);
  EXPECT_NE(html.find("id=\"retainers\""), std::string::npos);
  EXPECT_NE(html.find("id=\"typed\""), std::string::npos);
  EXPECT_NE(html.find("<a href=\"/flame\">"), std::string::npos);
}

}  // namespace
}  // namespace libdump::heapview
