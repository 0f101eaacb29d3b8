#include "libdump/format/hprof_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "testing/hprof_test_reader.h"

namespace libdump::format::hprof {
namespace {

using testing::Be;
using testing::Rec;
using testing::SubRecords;
using testing::TopRecords;

// Bytes from hex digits; spaces are for the reader.
std::string Hex(std::string_view hex) {
  std::string out;
  int nibbles = 0;
  unsigned v = 0;
  for (char c : hex) {
    if (c == ' ') continue;
    v = v << 4 | static_cast<unsigned>(c <= '9' ? c - '0' : c - 'A' + 10);
    if (++nibbles == 2) {
      out.push_back(static_cast<char>(v));
      nibbles = 0;
      v = 0;
    }
  }
  return out;
}

// The header and the empty TRACE every file starts with.
const std::string kPrologue = std::string("JAVA PROFILE 1.0.2", 19) +
                              Hex("00000008 0000018B 2F5A4C00") +
                              Hex("05 00000000 0000000C 00000001 00000000 00000000");

std::string Written(const std::function<void(Writer&)>& body, WriterOptions o = {}) {
  StringOutput out;
  o.timestamp_ms = 0x18B2F5A4C00;
  Writer w(out, o);
  body(w);
  w.Flush();
  return out.data();
}

// What follows the prologue.
std::string Tail(const std::string& file) {
  EXPECT_EQ(file.substr(0, kPrologue.size()), kPrologue);
  return file.substr(kPrologue.size());
}

TEST(HprofWriter, HeaderAndEmptyTrace) {
  EXPECT_EQ(Written([](Writer&) {}), kPrologue);
}

TEST(HprofWriter, TopLevelRecords) {
  const std::string f = Written([](Writer& w) {
    w.Utf8(0x10, "hi");
    w.LoadClass(3, 0x20, 1, 0x10);
    w.Frame(0x30, 0x10, 0x18, 0x28, 3, -1);
    const Id frames[] = {0x30, 0x38};
    w.Trace(2, 7, frames);
    w.StartThread(7, 0x40, 2, 0x10, 0x48, 0);
  });
  EXPECT_EQ(Tail(f),
            Hex("01 00000000 0000000A 0000000000000010 6869") +
            Hex("02 00000000 00000018 00000003 0000000000000020 00000001 0000000000000010") +
            Hex("04 00000000 00000028 0000000000000030 0000000000000010 0000000000000018 0000000000000028"
                " 00000003 FFFFFFFF") +
            Hex("05 00000000 0000001C 00000002 00000007 00000002 0000000000000030 0000000000000038") +
            Hex("0A 00000000 00000028 00000007 0000000000000040 00000002 0000000000000010 0000000000000048"
                " 0000000000000000"));
}

TEST(HprofWriter, RootsInOneSegmentThenEnd) {
  const std::string f = Written([](Writer& w) {
    w.RootUnknown(0x100);
    w.RootJniGlobal(0x100, 0x600000);
    w.RootJavaFrame(0x100, 7, 2);
    w.RootThreadObject(0x40, 7, 2);
    w.HeapDumpEnd();
  });
  EXPECT_EQ(Tail(f),
            Hex("1C 00000000 0000003C") +
            Hex("FF 0000000000000100") +
            Hex("01 0000000000000100 0000000000600000") +
            Hex("03 0000000000000100 00000007 00000002") +
            Hex("08 0000000000000040 00000007 00000002") +
            Hex("2C 00000000 00000000"));
}

TEST(HprofWriter, ClassDumpLayout) {
  const std::string f = Written([](Writer& w) {
    ClassDumpRecord c;
    c.id = 0x200;
    c.trace = 1;
    c.super = 0x208;
    c.instance_size = 24;
    c.statics = {{0x10, Type::kInt, 0xAABBCCDD}, {0x18, Type::kObject, 0x100}};
    c.fields = {{0x28, Type::kObject}, {0x30, Type::kByte}};
    w.ClassDump(c);
    w.HeapDumpEnd();
  });
  EXPECT_EQ(Tail(f),
            Hex("1C 00000000 00000077") +
            Hex("20 0000000000000200 00000001 0000000000000208 0000000000000000 0000000000000000"
                " 0000000000000000 0000000000000000 0000000000000000 00000018 0000"
                " 0002 0000000000000010 0A AABBCCDD 0000000000000018 02 0000000000000100"
                " 0002 0000000000000028 02 0000000000000030 08") +
            Hex("2C 00000000 00000000"));
}

TEST(HprofWriter, InstanceAndArrays) {
  const std::string f = Written([](Writer& w) {
    const uint8_t data[] = {0, 0, 0, 0, 0, 0, 1, 0, 0x7F};
    w.Instance(0x100, 1, 0x200, data);
    const Id elems[] = {0x100, 0};
    w.ObjectArray(0x110, 1, 0x210, elems);
    w.BeginPrimitiveArray(0x120, 1, Type::kShort, 3);
    const uint8_t shorts[] = {0, 1, 0, 2, 0xFF, 0xFF};
    w.Raw(std::span(shorts).first(2));
    w.Raw(std::span(shorts).subspan(2));
    w.HeapDumpEnd();
  });
  EXPECT_EQ(Tail(f),
            Hex("1C 00000000 00000063") +
            Hex("21 0000000000000100 00000001 0000000000000200 00000009 0000000000000100 7F") +
            Hex("22 0000000000000110 00000001 00000002 0000000000000210 0000000000000100 0000000000000000") +
            Hex("23 0000000000000120 00000001 00000003 09 0001 0002 FFFF") +
            Hex("2C 00000000 00000000"));
}

TEST(HprofWriter, InstanceDataFilledInPlaceIsTheSameRecord) {
  const uint8_t data[] = {0, 0, 0, 0, 0, 0, 1, 0, 0x7F};
  const auto instance = [&](bool in_place) {
    return Written([&](Writer& w) {
      if (in_place) {
        std::memcpy(w.InstanceData(0x100, 1, 0x200, sizeof data), data, sizeof data);
      } else {
        w.Instance(0x100, 1, 0x200, data);
      }
      w.RootUnknown(0x100);
      w.HeapDumpEnd();
    });
  };
  EXPECT_EQ(instance(true), instance(false));
}

TEST(HprofWriter, TopLevelAfterHeapIsRefused) {
  StringOutput out;
  Writer w(out);
  w.RootUnknown(0x100);
  EXPECT_THROW(w.Utf8(1, "late"), std::logic_error);
  w.HeapDumpEnd();
  EXPECT_THROW(w.RootUnknown(0x100), std::logic_error);
}

TEST(HprofWriter, StreamedArrayMustBeComplete) {
  StringOutput out;
  Writer w(out);
  w.BeginObjectArray(0x100, 1, 0x200, 2);
  const Id one[] = {0x100};
  w.Ids(one);
  EXPECT_THROW(w.RootUnknown(0x100), std::logic_error);
  EXPECT_THROW(w.HeapDumpEnd(), std::logic_error);
  const Id two[] = {0x100, 0x100};
  EXPECT_THROW(w.Ids(two), std::logic_error);
  w.Ids(one);
  w.HeapDumpEnd();
}

// Splits between sub-records only: every segment parses on its own, none is
// empty, none exceeds the limit unless one sub-record alone does.
TEST(HprofWriter, SegmentsSplitBetweenSubRecords) {
  WriterOptions o;
  o.max_segment = 40;
  o.buffer_size = 64;  // small enough that some lengths are patched in the file, not the buffer
  const std::string f = Written(
      [](Writer& w) {
        for (Id i = 1; i <= 10; ++i) w.RootUnknown(i * 8);              // 9 bytes each: 4 per segment
        const std::vector<Id> big(10, 8);                              // 105 bytes: alone in its segment
        w.ObjectArray(0x1000, 1, 0x2000, big);
        w.RootJniGlobal(16, 0);
        w.HeapDumpEnd();
      },
      o);
  const std::vector<Rec> recs = TopRecords(f);
  std::vector<size_t> sizes;
  std::vector<size_t> counts;
  for (size_t i = 1; i < recs.size(); ++i) {  // recs[0] is the empty trace
    if (recs[i].tag == 0x2C) {
      EXPECT_EQ(i, recs.size() - 1);
      EXPECT_TRUE(recs[i].body.empty());
      continue;
    }
    ASSERT_EQ(recs[i].tag, 0x1C);
    sizes.push_back(recs[i].body.size());
    counts.push_back(SubRecords(recs[i].body).size());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{36, 36, 18, 105, 17}));
  EXPECT_EQ(counts, (std::vector<size_t>{4, 4, 2, 1, 1}));
}

TEST(HprofWriter, SegmentLengthPatchedAcrossLargeWrites) {
  WriterOptions o;
  o.buffer_size = 64;
  const std::string f = Written(
      [](Writer& w) {
        std::vector<uint8_t> big(1000, 0xAB);
        w.BeginPrimitiveArray(0x100, 1, Type::kByte, 1000);
        w.Raw(big);
        w.RootUnknown(0x100);
        w.HeapDumpEnd();
      },
      o);
  const std::vector<Rec> recs = TopRecords(f);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].tag, 0x1C);
  const std::vector<Rec> subs = SubRecords(recs[1].body);
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0].tag, 0x23);
  EXPECT_EQ(Be(subs[0].body, 12, 4), 1000u);
  EXPECT_EQ(subs[1].tag, 0xFF);
}

TEST(HprofWriter, TypeSizes) {
  EXPECT_EQ(TypeSize(Type::kObject), 8u);
  EXPECT_EQ(TypeSize(Type::kBoolean), 1u);
  EXPECT_EQ(TypeSize(Type::kChar), 2u);
  EXPECT_EQ(TypeSize(Type::kFloat), 4u);
  EXPECT_EQ(TypeSize(Type::kDouble), 8u);
  EXPECT_EQ(TypeSize(Type::kShort), 2u);
  EXPECT_STREQ(PrimitiveArrayClassName(Type::kLong), "[J");
  EXPECT_STREQ(PrimitiveArrayClassName(Type::kBoolean), "[Z");
  EXPECT_THROW(PrimitiveArrayClassName(Type::kObject), std::invalid_argument);
}

}  // namespace
}  // namespace libdump::format::hprof
