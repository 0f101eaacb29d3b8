// --validate on a Go runtime's dump (testdata/go-1.19.heapdump, Go 1.19.8):
// the real dump is valid, and the corruptions below, each at a hand-checked
// byte of that file (`readdump --records` and xxd), are found where they are.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/reader.h"
#include "validate.h"

namespace libdump::readdump {
namespace {

using format::Kind;

std::string RealDump() {
  std::ifstream f(std::string(GO_DUMP_TESTDATA) + "/go-1.19.heapdump", std::ios::binary);
  EXPECT_TRUE(f) << GO_DUMP_TESTDATA;
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct StreamReader {
  std::istringstream in;
  format::Reader reader;
  explicit StreamReader(const std::string& bytes) : in(bytes), reader(in) {}
};

std::vector<Problem> Validate(const std::string& bytes) {
  std::vector<Problem> out;
  ValidateDump(
      [&] {
        auto s = std::make_shared<StreamReader>(bytes);
        return std::shared_ptr<format::Reader>(s, &s->reader);
      },
      [&](const Problem& p) { out.push_back(p); });
  return out;
}

// The 8 little-endian bytes at `at` are `was`; they become `now`.
void Patch(std::string& d, size_t at, uint64_t was, uint64_t now) {
  uint64_t old = 0;
  for (int i = 7; i >= 0; --i) old = old << 8 | static_cast<uint8_t>(d[at + i]);
  ASSERT_EQ(old, was) << "testdata changed at " << at;
  for (int i = 0; i < 8; ++i) d[at + i] = static_cast<char>(now >> (8 * i));
}

TEST(ValidateGo, RealDumpIsValid) {
  const std::string d = RealDump();
  ASSERT_EQ(d.size(), 346389u);
  EXPECT_TRUE(Validate(d).empty());
}

// What the libdump rules alone say about the same dump: the stack root of
// runtime.main (frame at 62990) holds the address of its own frame's _defer,
// and Go writes the five finalizers' ot types without type records.
TEST(ValidateGo, LibdumpRulesWouldRejectTheRealDump) {
  const std::string d = RealDump();
  std::vector<Problem> got;
  Validator strict([&](const Problem& p) { got.push_back(p); });
  for (int pass = 0; pass < 2; ++pass) {
    std::istringstream in(d);
    format::Reader reader(in);
    format::Record r;
    while (reader.Next(r)) pass == 0 ? strict.Collect(r) : strict.Check(r, reader);
    if (pass == 0) strict.FinishCollect();
  }
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].offset, 62990u);
  EXPECT_EQ(got[0].message,
            "stack root at 0xc000071fc8: rootptr 0xc000071fb8 is in the heap but in no dumped object");
  for (size_t i = 1; i < 6; ++i) EXPECT_EQ(got[i].kind, Kind::kFinalizer) << got[i].message;
}

// Node 0xc00008a0a0 (object record at 49419, contents from 49427): its prev
// pointer at +16 (file offset 49443) is 0xc00008a0f0. Pointed at
// 0xc003000000, inside the arena [0xc000000000, 0xc004000000) but past the
// last object (0xc0000ac020) and far from every goroutine stack, it dangles.
TEST(ValidateGo, FindsAPointerIntoNowhere) {
  std::string d = RealDump();
  Patch(d, 49443, 0xc00008a0f0, 0xc003000000);
  const std::vector<Problem> got = Validate(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].offset, 49419u);
  EXPECT_EQ(got[0].kind, Kind::kObject);
  EXPECT_EQ(got[0].message, "object 0xc00008a0a0 \"obj80[0,16]\": pointer at +16 is 0xc003000000, "
                            "in the heap but in no dumped object");
}

// Node 0xc00008a0f0 (record at 49512, address uvarint f0 c1 a2 80 80 18 from
// 49513): its first byte 0xf0 -> 0xe0 moves it to 0xc00008a0e0, inside the
// 80 bytes of node 0xc00008a0a0.
TEST(ValidateGo, FindsOverlappingObjects) {
  std::string d = RealDump();
  ASSERT_EQ(static_cast<uint8_t>(d[49513]), 0xf0);
  d[49513] = static_cast<char>(0xe0);
  const std::vector<Problem> got = Validate(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].offset, 49512u);
  EXPECT_EQ(got[0].message, "object 0xc00008a0e0 (80 bytes) overlaps object 0xc00008a0a0 (80 bytes) at offset 49419");
}

// Goroutine 1's frames span [0xc0000707e0, end of runtime.goexit at
// 0xc000071fe0): its stack's memory below the top frame is dead. The stack
// root word of runtime.main (frame at 62990, contents from 63005, word +0x48
// at 63077) pointed at 0xc000070100, below the top frame, dangles.
TEST(ValidateGo, StackAllowanceEndsAtTheDumpedFrames) {
  std::string d = RealDump();
  Patch(d, 63077, 0xc000071fb8, 0xc000070100);
  const std::vector<Problem> got = Validate(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].offset, 62990u);
  EXPECT_EQ(got[0].message,
            "stack root at 0xc000071fc8: rootptr 0xc000070100 is in the heap but in no dumped object");
}

TEST(ValidateGo, TruncatedDumpIsAFormatError) {
  const std::string d = RealDump();
  for (size_t n : {size_t{20}, size_t{49450}, d.size() - 1}) {
    EXPECT_THROW(Validate(d.substr(0, n)), format::FormatError) << n;
  }
}

}  // namespace
}  // namespace libdump::readdump
