#include "svg.h"

#include <gtest/gtest.h>

#include "testing/markup.h"

namespace libdump::heapview {
namespace {

TEST(Svg, EscapesTextTitlesAndLinks) {
  Svg s(100, 20, "a \"chart\"", "x");
  s.Rect(0, 0, 10.04, 5.25, "red", "<script>alert(1)</script> & 'q'", "/class?name=a&b=\"c\"");
  s.Text(1, 2, "<b>&amp;</b>", "middle");
  const std::string out = s.Finish();
  EXPECT_EQ(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"x\" width=\"100\" height=\"20\" viewBox=\"0 0 100 20\" "
            "role=\"img\" aria-label=\"a &quot;chart&quot;\" font-family=\"sans-serif\">"
            "<a href=\"/class?name=a&amp;b=&quot;c&quot;\"><rect x=\"0\" y=\"0\" width=\"10\" height=\"5.3\" "
            "fill=\"red\"><title>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;q&#39;</title></rect></a>"
            "<text x=\"1\" y=\"2\" font-size=\"12\" text-anchor=\"middle\" fill=\"#222\">"
            "&lt;b&gt;&amp;amp;&lt;/b&gt;</text></svg>");
  EXPECT_EQ(testing::MarkupProblem(out), "");
}

TEST(Svg, MarkupCheckFindsWhatBreaksAPage) {
  EXPECT_NE(testing::MarkupProblem("<svg><text>a < b</text></svg>"), "");
  EXPECT_NE(testing::MarkupProblem("<svg><script>x</script></svg>"), "");
  EXPECT_NE(testing::MarkupProblem("<svg><rect onload=\"x\"/></svg>"), "");
  EXPECT_NE(testing::MarkupProblem("<svg><g></svg>"), "");
  EXPECT_NE(testing::MarkupProblem("<svg>&</svg>"), "");
  EXPECT_EQ(testing::MarkupProblem("<svg><g><rect x=\"1\"/></g></svg>"), "");
}

TEST(Svg, CoordinatesToATenth) {
  EXPECT_EQ(Coord(0), "0");
  EXPECT_EQ(Coord(12.25), "12.3");
  EXPECT_EQ(Coord(-3.04), "-3");
  EXPECT_EQ(Coord(1.0 / 0.0), "0");
  EXPECT_EQ(Point(1.5, 2), "1.5,2");
}

TEST(Svg, FitCutsWholeCharacters) {
  EXPECT_EQ(Fit("abcdef", 6), "abcdef");
  EXPECT_EQ(Fit("abcdef", 3), "ab\u2026");
  EXPECT_EQ(Fit("\u00e9\u00e9\u00e9\u00e9", 3), "\u00e9\u00e9\u2026");
  EXPECT_EQ(Fit("abc", 0), "");
}

TEST(Svg, OneColourPerName) {
  EXPECT_EQ(ColorOf("Node"), ColorOf("Node"));
  EXPECT_NE(ColorOf("Node"), ColorOf("Edge"));
  EXPECT_TRUE(ColorOf("x").starts_with("hsl("));
}

}  // namespace
}  // namespace libdump::heapview
