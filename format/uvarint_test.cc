#include "libdump/format/uvarint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace libdump::format {
namespace {

UvarintResult Decode(std::vector<uint8_t> b) { return GetUvarint(b.data(), b.size()); }

TEST(Uvarint, KnownEncodingsMatchGo) {
  // Values and bytes from Go's encoding/binary.PutUvarint.
  struct Case { uint64_t v; std::vector<uint8_t> bytes; };
  const Case cases[] = {
      {0, {0x00}},
      {1, {0x01}},
      {127, {0x7f}},
      {128, {0x80, 0x01}},
      {300, {0xac, 0x02}},
      {16383, {0xff, 0x7f}},
      {16384, {0x80, 0x80, 0x01}},
      {std::numeric_limits<uint64_t>::max(),
       {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
  };
  for (const Case& c : cases) {
    uint8_t buf[kMaxUvarintLen];
    const size_t n = PutUvarint(buf, c.v);
    EXPECT_EQ(std::vector<uint8_t>(buf, buf + n), c.bytes) << c.v;
    EXPECT_EQ(UvarintLen(c.v), n);
    const UvarintResult r = Decode(c.bytes);
    EXPECT_EQ(r.status, UvarintStatus::kOk);
    EXPECT_EQ(r.value, c.v);
    EXPECT_EQ(r.len, n);
  }
}

TEST(Uvarint, RoundTripsEveryBitLength) {
  for (int bits = 0; bits <= 64; ++bits) {
    for (uint64_t delta : {0ull, 1ull}) {
      const uint64_t v = bits == 64 ? ~0ull - delta : ((1ull << bits) - 1) + delta;
      uint8_t buf[kMaxUvarintLen + 4] = {};
      const size_t n = PutUvarint(buf, v);
      const UvarintResult r = GetUvarint(buf, sizeof buf);
      ASSERT_EQ(r.status, UvarintStatus::kOk) << v;
      EXPECT_EQ(r.value, v);
      EXPECT_EQ(r.len, n);
    }
  }
}

TEST(Uvarint, TruncatedInput) {
  EXPECT_EQ(Decode({}).status, UvarintStatus::kTruncated);
  EXPECT_EQ(Decode({0x80}).status, UvarintStatus::kTruncated);
  EXPECT_EQ(Decode({0xff, 0xff, 0xff}).status, UvarintStatus::kTruncated);
  EXPECT_EQ(Decode({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).status,
            UvarintStatus::kTruncated);
}

TEST(Uvarint, RejectsOverflow) {
  // The tenth byte may only carry the 64th bit.
  EXPECT_EQ(Decode({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}).status,
            UvarintStatus::kOverflow);
  EXPECT_EQ(Decode({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}).status,
            UvarintStatus::kOverflow);
}

TEST(Uvarint, RejectsOverlongEncodings) {
  EXPECT_EQ(Decode({0x80, 0x00}).status, UvarintStatus::kOverlong);  // 0 in two bytes
  EXPECT_EQ(Decode({0x81, 0x80, 0x00}).status, UvarintStatus::kOverlong);
  const UvarintResult r = Decode({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x00});
  EXPECT_EQ(r.status, UvarintStatus::kOverlong);
  EXPECT_EQ(r.len, 10u);
}

}  // namespace
}  // namespace libdump::format
