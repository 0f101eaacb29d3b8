// The gathering writer (WriterOptions::gather_min) must produce exactly the
// bytes of the copying one, whatever the buffer and iovec limits cut.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "testing/sample_records_testutil.h"

namespace libdump::format {
namespace {

// Remembers how each Writev call was cut, and the bytes.
class RecordingSink final : public Sink {
 public:
  void Write(const void* data, size_t n) override {
    bytes.append(static_cast<const char*>(data), n);
    ++writes;
  }
  void Writev(iovec* iov, int n) override {
    ++writevs;
    max_pieces = std::max(max_pieces, n);
    for (int i = 0; i < n; ++i) {
      EXPECT_GT(iov[i].iov_len, 0u) << "empty piece " << i;
      bytes.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    }
  }
  std::string bytes;
  int writes = 0, writevs = 0, max_pieces = 0;
};

// Objects of 1..3000 bytes whose contents differ, so a piece out of order or
// repeated shows.
std::vector<std::string> Payloads(size_t count) {
  std::vector<std::string> out;
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < count; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::string p(1 + x % 3000, '\0');
    for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<char>((i * 31 + j) & 0xff);
    out.push_back(std::move(p));
  }
  return out;
}

std::string Dump(WriterOptions o, const std::vector<std::string>& payloads, RecordingSink& sink) {
  Writer w(sink, o);
  w.Header();
  uint64_t addr = 0x10000;
  for (const std::string& p : payloads) {
    w.Object({addr, 0, kObjRegular, p.size()}, p.data());
    w.DataRoot({addr + 8, addr});  // small records between the payloads
    addr += 4096;
  }
  w.Eof();
  EXPECT_EQ(w.error(), 0);
  return sink.bytes;
}

TEST(WriterGather, SameBytesAsCopying) {
  const auto payloads = Payloads(3000);
  RecordingSink copied, gathered;
  const std::string want = Dump({}, payloads, copied);
  const std::string got = Dump({.gather_min = 64}, payloads, gathered);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  EXPECT_EQ(copied.writevs, 0);
  EXPECT_GT(gathered.writevs, 0);
}

// An object written head first and then in pieces of every cut (the first
// byte, a few bytes, the rest) is the object written whole.
TEST(WriterObjectPieces, SameBytesAsOneCall) {
  const auto payloads = Payloads(300);
  RecordingSink whole;
  const std::string want = Dump({.buffer_size = 4096}, payloads, whole);
  RecordingSink pieces;
  {
    Writer w(pieces, {.buffer_size = 4096});
    w.Header();
    uint64_t addr = 0x10000;
    size_t cut = 0;
    for (const std::string& p : payloads) {
      w.ObjectHead({addr, 0, kObjRegular, p.size()});
      const size_t a = std::min(p.size(), cut++ % 7), b = std::min(p.size(), a + cut % 2100);
      w.ObjectBytes(p.data(), a);
      w.ObjectBytes(p.data() + a, b - a);
      w.ObjectBytes(p.data() + b, p.size() - b);
      w.DataRoot({addr + 8, addr});
      addr += 4096;
    }
    w.Eof();
  }
  EXPECT_TRUE(pieces.bytes == want);
}

TEST(WriterGather, TinyBufferAndManyPiecesStayInOrder) {
  const auto payloads = Payloads(5000);
  RecordingSink copied, gathered;
  const std::string want = Dump({.buffer_size = 4096}, payloads, copied);
  const std::string got = Dump({.buffer_size = 4096, .gather_min = 1}, payloads, gathered);
  EXPECT_TRUE(got == want);
  // More pieces than one writev may take: the writer must have split them.
  EXPECT_GT(gathered.writevs, 1);
  EXPECT_LE(gathered.max_pieces, 512);
}

TEST(WriterGather, EveryRecordKindReadsTheSame) {
  RecordingSink copied, gathered;
  {
    Writer w(copied);
    testing::WriteSample(w, testing::SampleRecords());
  }
  {
    Writer w(gathered, {.gather_min = 1});
    testing::WriteSample(w, testing::SampleRecords());
  }
  EXPECT_TRUE(copied.bytes == gathered.bytes);
  EXPECT_EQ(copied.bytes, testing::SampleDump());
}

// A record's strings belong to its caller, who may free them as soon as the
// call returns (a frame name demangled into a temporary): only object
// payloads are gathered, however long a name is.
TEST(WriterGather, RecordStringsAreCopiedNotGathered) {
  RecordingSink copied, gathered;
  const std::string name(1000, 'n');
  auto write = [&](Writer& w) {
    std::string scratch = name;  // overwritten below, before the flush
    w.Frame({0x1000, 0, 0x2000, 0x2010, scratch});
    w.Type({0x3000, 16, scratch, false, {}});
    w.OtherRoot(scratch, 0x4000);
    scratch.assign(scratch.size(), 'X');
    w.Eof();
  };
  {
    Writer w(copied);
    write(w);
  }
  {
    Writer w(gathered, {.gather_min = 1});
    write(w);
  }
  EXPECT_TRUE(copied.bytes == gathered.bytes);
  EXPECT_EQ(gathered.bytes.find('X'), std::string::npos);
  EXPECT_NE(gathered.bytes.find(name), std::string::npos);
}

}  // namespace
}  // namespace libdump::format
