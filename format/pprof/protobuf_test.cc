#include "libdump/format/pprof_protobuf.h"

#include <gtest/gtest.h>

#include <vector>

namespace libdump::pprof {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

// Reference encodings from the protobuf encoding guide.
TEST(ProtoEncoder, VarintField) {
  ProtoEncoder e;
  e.Uint64(1, 150);
  EXPECT_EQ(e.bytes(), Bytes({0x08, 0x96, 0x01}));
}

TEST(ProtoEncoder, StringField) {
  ProtoEncoder e;
  e.String(2, "testing");
  EXPECT_EQ(e.bytes(), Bytes({0x12, 0x07}) + "testing");
}

TEST(ProtoEncoder, DefaultsAreOmittedUnlessAlways) {
  ProtoEncoder e;
  e.Uint64(1, 0);
  e.Int64(2, 0);
  e.String(3, "");
  e.Bool(4, false);
  EXPECT_TRUE(e.bytes().empty());
  e.StringAlways(6, "");
  EXPECT_EQ(e.bytes(), Bytes({0x32, 0x00}));
}

TEST(ProtoEncoder, NegativeInt64IsTenBytes) {
  ProtoEncoder e;
  e.Int64(1, -1);
  EXPECT_EQ(e.bytes(), Bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
}

TEST(ProtoEncoder, PackedRepeated) {
  ProtoEncoder e;
  std::vector<int64_t> v{3, 270, 86942};
  e.PackedInt64(4, v);
  EXPECT_EQ(e.bytes(), Bytes({0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05}));
  ProtoEncoder empty;
  empty.PackedUint64(4, {});
  EXPECT_TRUE(empty.bytes().empty());
}

TEST(ProtoEncoder, NestedMessageLengthPrefixed) {
  ProtoEncoder e;
  e.Uint64(1, 1);
  const size_t outer = e.StartMessage();
  e.Uint64(1, 150);
  const size_t inner = e.StartMessage();
  e.String(2, "ab");
  e.EndMessage(5, inner);
  e.EndMessage(3, outer);
  EXPECT_EQ(e.bytes(), Bytes({0x08, 0x01, 0x1a, 0x09, 0x08, 0x96, 0x01, 0x2a, 0x04, 0x12, 0x02, 'a', 'b'}));
}

TEST(ProtoEncoder, LongNestedMessageGetsMultiByteLength) {
  ProtoEncoder e;
  const size_t start = e.StartMessage();
  e.String(1, std::string(200, 'x'));  // body: 1 tag + 2 length + 200 = 203 bytes
  e.EndMessage(2, start);
  ASSERT_EQ(e.bytes().size(), 1u + 2u + 203u);
  EXPECT_EQ(e.bytes().substr(0, 3), Bytes({0x12, 0xcb, 0x01}));
}

}  // namespace
}  // namespace libdump::pprof
