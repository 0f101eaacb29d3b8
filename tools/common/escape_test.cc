#include "escape.h"

#include <gtest/gtest.h>

#include <sstream>

#include "json_writer.h"

namespace libdump::readdump {
namespace {

TEST(QuoteText, PlainAsciiAndEscapes) {
  EXPECT_EQ(QuoteText("Node"), "\"Node\"");
  EXPECT_EQ(QuoteText("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(QuoteText(std::string("nul\0x\n\t\x7f", 8)), "\"nul\\x00x\\n\\t\\x7f\"");
}

TEST(QuoteText, Utf8PassesInvalidBytesEscaped) {
  EXPECT_EQ(QuoteText("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(QuoteText("\xc3"), "\"\\xc3\"");                 // truncated sequence
  EXPECT_EQ(QuoteText("\xc0\xaf"), "\"\\xc0\\xaf\"");        // overlong '/'
  EXPECT_EQ(QuoteText("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");  // surrogate U+D800
  EXPECT_EQ(QuoteText("\xf4\x90\x80\x80"), "\"\\xf4\\x90\\x80\\x80\"");  // above U+10FFFF
  EXPECT_EQ(QuoteText("\xe2\x82"), "\"\\xe2\\x82\"");
}

TEST(QuoteJson, ControlBytesAndInvalidUtf8) {
  EXPECT_EQ(QuoteJson("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(QuoteJson(std::string("\0\x01\x1f\r\n\t\x7f", 7)), "\"\\u0000\\u0001\\u001f\\r\\n\\t\\u007f\"");
  EXPECT_EQ(QuoteJson("\xc3\xa9"), "\"\xc3\xa9\"");
  EXPECT_EQ(QuoteJson("x\xff\xc3y"), "\"x\\ufffd\\ufffdy\"");
  EXPECT_EQ(QuoteJson("\xed\xbf\xbf"), "\"\\ufffd\\ufffd\\ufffd\"");
}

TEST(JsonWriter, NestingAndCommas) {
  std::ostringstream os;
  JsonWriter j(os);
  j.BeginObject();
  j.Key("a");
  j.Uint(1);
  j.Key("b");
  j.BeginArray();
  j.Hex(255);
  j.Null();
  j.EndArray();
  j.Key("c");
  j.BeginObject();
  j.EndObject();
  j.Key("d\n");
  j.Bool(false);
  j.EndObject();
  j.Finish();
  EXPECT_EQ(os.str(),
            "{\n  \"a\": 1,\n  \"b\": [\n    \"0xff\",\n    null\n  ],\n  \"c\": {},\n  \"d\\n\": false\n}\n");
}

}  // namespace
}  // namespace libdump::readdump
