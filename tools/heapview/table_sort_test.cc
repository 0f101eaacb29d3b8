#include "table_sort.h"

#include <gtest/gtest.h>

namespace libdump::heapview {
namespace {

TEST(TableSort, OrderFromTheQueryOrTheColumnsDefault) {
  const std::vector<std::string> cols = {"retained", "size", "class"};
  SortOrder o = ParseSortOrder(ParseTarget("/t"), cols);
  EXPECT_EQ(o.column, "retained");
  EXPECT_TRUE(o.desc);
  o = ParseSortOrder(ParseTarget("/t?sort=class"), cols);
  EXPECT_EQ(o.column, "class");
  EXPECT_FALSE(o.desc);  // names ascend
  o = ParseSortOrder(ParseTarget("/t?sort=size&order=asc"), cols);
  EXPECT_EQ(o.column, "size");
  EXPECT_FALSE(o.desc);
  o = ParseSortOrder(ParseTarget("/t?sort=%3Cx%3E&order=up"), cols);
  EXPECT_EQ(o.column, "retained");
  EXPECT_TRUE(o.desc);
}

TEST(TableSort, HeaderLinksTurnTheCurrentOrderAround) {
  const SortOrder now{"size", true};
  EXPECT_EQ(SortHeader("/dominators", "filter=a%26b", now, "size", "size"),
            "<th><a href=\"/dominators?sort=size&amp;order=asc&amp;filter=a%26b\">size</a> &#9660;</th>");
  EXPECT_EQ(SortHeader("/dominators", "", now, "class", "<class>"),
            "<th><a href=\"/dominators?sort=class\">&lt;class&gt;</a></th>");
}

TEST(TableSort, FilterFormKeepsItsParametersEscaped) {
  EXPECT_EQ(QueryTail({{"filter", "a b&"}, {"platform", ""}, {"sort", "name"}}), "filter=a%20b%26&sort=name");
  EXPECT_EQ(FilterForm("/histogram", "\"><script>", {{"sort", "name"}, {"platform", ""}}),
            "<form method=\"get\" action=\"/histogram\" class=\"filter\">class <input name=\"filter\" "
            "value=\"&quot;&gt;&lt;script&gt;\" placeholder=\"part of a name, or a*pattern\">"
            "<input type=\"hidden\" name=\"sort\" value=\"name\"> <input type=\"submit\" value=\"Filter\"></form>");
}

TEST(TableSort, ClassFilterBySubstringOrGlob) {
  EXPECT_TRUE(ClassMatches("", "Node"));
  EXPECT_TRUE(ClassMatches("node", "app::Node"));
  EXPECT_FALSE(ClassMatches("edge", "app::Node"));
  EXPECT_TRUE(ClassMatches("app::*", "app::Node"));
  EXPECT_FALSE(ClassMatches("*::Edge", "app::Node"));
}

}  // namespace
}  // namespace libdump::heapview
