#include "html.h"

#include <gtest/gtest.h>

namespace libdump::heapview {
namespace {

TEST(Html, EscapesMarkupAndBadUtf8) {
  EXPECT_EQ(Escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(Escape("a&b\"c'd"), "a&amp;b&quot;c&#39;d");
  EXPECT_EQ(Escape("caf\xC3\xA9"), "caf\xC3\xA9");        // valid UTF-8 kept
  EXPECT_EQ(Escape("x\xC3("), "x\xEF\xBF\xBD(");          // cut sequence replaced
  EXPECT_EQ(Escape(std::string("\x01", 1)), "\xEF\xBF\xBD");  // control character
  // Well-formed in shape but not UTF-8: each bad byte becomes U+FFFD.
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(Escape("\xE0\x80\xAF"), r + r + r);              // overlong '/'
  EXPECT_EQ(Escape("\xC0\xAF"), r + r);                       // overlong, two bytes
  EXPECT_EQ(Escape("\xED\xA0\x80"), r + r + r);              // a UTF-16 surrogate
  EXPECT_EQ(Escape("\xF0\x80\x80\xAF"), r + r + r + r);       // overlong, four bytes
  EXPECT_EQ(Escape("\xF4\x90\x80\x80"), r + r + r + r);       // past U+10FFFF
  EXPECT_EQ(Escape("\xF5\x80\x80\x80"), r + r + r + r);
  EXPECT_EQ(Escape("\xE2\x82\xAC\xF0\x9F\x98\x80"), "\xE2\x82\xAC\xF0\x9F\x98\x80");  // kept
}

TEST(Html, UrlRoundTrip) {
  const std::string name = "<script>alert(1)</script> & java.lang.String[]";
  EXPECT_EQ(UrlDecode(UrlEncode(name)), name);
  EXPECT_EQ(UrlEncode("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(UrlDecode("%zz%4"), "%zz%4");  // malformed escapes stay as they are
}

TEST(Html, ParsesTargets) {
  const Target t = ParseTarget("/class?name=java.lang.String%5B%5D&page=3&flag");
  EXPECT_EQ(t.path, "/class");
  EXPECT_EQ(t.Get("name"), "java.lang.String[]");
  EXPECT_EQ(t.GetUint("page", 0), 3u);
  EXPECT_EQ(t.GetUint("flag", 7), 7u);
  EXPECT_EQ(t.Get("missing", "x"), "x");
  EXPECT_EQ(Thousands(1234567), "1,234,567");
  EXPECT_EQ(Thousands(999), "999");
}

}  // namespace
}  // namespace libdump::heapview
