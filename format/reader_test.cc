// Malformed input: every failure is a FormatError naming the right offset.
#include "libdump/format/reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <boost/iostreams/device/back_inserter.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/uvarint.h"
#include "testing/sample_records_testutil.h"

namespace libdump::format {
namespace {

std::string Hdr() { return std::string(kHeader); }

std::string V(uint64_t v) {
  uint8_t b[kMaxUvarintLen];
  return std::string(reinterpret_cast<char*>(b), PutUvarint(b, v));
}

// Reads the whole dump, payloads included; returns the error or "" if valid.
std::string ParseError(const std::string& bytes, uint64_t* offset = nullptr,
                       ReaderOptions options = {}) {
  std::istringstream in(bytes);
  try {
    Reader reader(in, options);
    Record r;
    while (reader.Next(r)) {
      if (r.kind == Kind::kObject) reader.ReadPayload([](std::span<const uint8_t>) {});
    }
  } catch (const FormatError& e) {
    if (offset) *offset = e.offset();
    return e.what();
  }
  return "";
}

std::vector<uint64_t> RecordOffsets(const std::string& bytes) {
  std::istringstream in(bytes);
  Reader reader(in);
  Record r;
  std::vector<uint64_t> offsets;
  while (reader.Next(r)) offsets.push_back(r.offset);
  return offsets;
}

TEST(ReaderErrors, TruncatedAtEveryByte) {
  const std::string dump = testing::SampleDump();
  const std::vector<uint64_t> starts = RecordOffsets(dump);
  ASSERT_EQ(starts.front(), kHeader.size());
  for (size_t k = 0; k < dump.size(); ++k) {
    uint64_t off = ~0ull;
    const std::string err = ParseError(dump.substr(0, k), &off);
    ASSERT_FALSE(err.empty()) << "prefix of " << k << " bytes parsed as a whole dump";
    if (k < kHeader.size()) {
      EXPECT_EQ(off, 0u) << err;
      continue;
    }
    // The error names a field of the record cut short, never a byte beyond the cut.
    const auto it = std::upper_bound(starts.begin(), starts.end(), k);
    const uint64_t record_start = *(it - 1);
    EXPECT_GE(off, record_start) << "cut at " << k << ": " << err;
    EXPECT_LE(off, k) << "cut at " << k << ": " << err;
    if (k == record_start) {
      EXPECT_NE(err.find("expected a record (no eof record)"), std::string::npos) << err;
    }
  }
  EXPECT_EQ(ParseError(dump), "");
}

TEST(ReaderErrors, BadHeader) {
  uint64_t off = 1;
  EXPECT_NE(ParseError("", &off).find("header: expected"), std::string::npos);
  EXPECT_EQ(off, 0u);
  EXPECT_NE(ParseError("go1.3 heap dumq\n" + V(3)).find("header"), std::string::npos);
  EXPECT_NE(ParseError("go1.9 heap dump\n" + V(3)).find("unsupported dialect"), std::string::npos);
  EXPECT_NE(ParseError("\x7f" "ELF").find("\\x7fELF"), std::string::npos);
}

TEST(ReaderErrors, OverlongAndOverflowingVarints) {
  uint64_t off = 0;
  // kind 3 written as 0x83 0x00.
  std::string err = ParseError(Hdr() + "\x83" + std::string(1, '\0'), &off);
  EXPECT_EQ(off, 16u);
  EXPECT_NE(err.find("overlong"), std::string::npos) << err;
  // dataroot whose addr overflows 64 bits.
  err = ParseError(Hdr() + V(5) + std::string(9, '\xff') + "\x02" + V(0) + V(3), &off);
  EXPECT_EQ(off, 17u);
  EXPECT_NE(err.find("kind 5 (dataroot): addr: uvarint overflows"), std::string::npos) << err;
}

// The fast path decodes values away from the end of the bytes at hand: every
// length, every value boundary, and overlong encodings of every length.
TEST(ReaderErrors, VarintsOfEveryLengthAwayFromTheEnd) {
  std::vector<uint64_t> values = {0, 1, 127, 128, 255, 16383, 16384, UINT64_MAX, UINT64_MAX - 1};
  for (unsigned bits = 7; bits < 64; bits += 7) {
    values.push_back((uint64_t{1} << bits) - 1);
    values.push_back(uint64_t{1} << bits);
    values.push_back((uint64_t{1} << bits) | 0x55);
  }
  std::string dump = Hdr();
  for (uint64_t v : values) dump += V(5) + V(v) + V(~v);
  const std::string tail = V(3);
  std::istringstream in(dump + tail);
  Reader reader(in);
  Record r;
  for (uint64_t v : values) {
    ASSERT_TRUE(reader.Next(r));
    ASSERT_EQ(r.kind, Kind::kDataRoot);
    EXPECT_EQ(r.data_root.addr, v);
    EXPECT_EQ(r.data_root.ptr, ~v);
  }
  for (size_t len = 2; len <= kMaxUvarintLen; ++len) {
    // 0x81 0x80 ... 0x00: the value 1 in len bytes, followed by plenty of records.
    std::string overlong = "\x81" + std::string(len - 2, '\x80') + std::string(1, '\0');
    uint64_t off = 0;
    const std::string err = ParseError(Hdr() + V(5) + overlong + V(0) + dump.substr(Hdr().size()) + tail, &off);
    EXPECT_EQ(off, 17u) << len;
    EXPECT_NE(err.find("kind 5 (dataroot): addr: overlong uvarint"), std::string::npos) << len << ": " << err;
  }
}

// Object headers away from the end are decoded in one go; their errors are
// still those of the field at fault.
TEST(ReaderErrors, ObjectFieldErrorsAwayFromTheEnd) {
  std::string padding;
  for (int i = 0; i < 20; ++i) padding += V(5) + V(0x7f0000000000) + V(0x7f0000000000);
  uint64_t off = 0;
  // addr 0x7f0000000000 (7 bytes), type 0x100 (2), kind 7.
  std::string err = ParseError(Hdr() + V(1) + V(0x7f0000000000) + V(0x100) + V(7) + V(8) + std::string(8, 'x') +
                                   padding + V(3), &off);
  EXPECT_EQ(off, 16u + 1 + 7 + 2);
  EXPECT_NE(err.find("kind 1 (object): kind: expected 0, 1 or 2, got 7"), std::string::npos) << err;
  // An overlong type.
  err = ParseError(Hdr() + V(1) + V(0x1000) + "\x81\x80" + std::string(1, '\0') + V(0) + V(8) + std::string(8, 'x') +
                       padding + V(3), &off);
  EXPECT_EQ(off, 16u + 1 + 2);
  EXPECT_NE(err.find("kind 1 (object): type: overlong uvarint"), std::string::npos) << err;
  // A size past the end of a regular file.
  const std::string big = Hdr() + V(1) + V(0x1000) + V(0) + V(0) + V(1000000) + padding + V(3);
  char name[] = "/tmp/reader_test_XXXXXX";
  const int fd = ::mkstemp(name);
  ASSERT_EQ(::write(fd, big.data(), big.size()), static_cast<ssize_t>(big.size()));
  ::lseek(fd, 0, SEEK_SET);
  try {
    Reader reader(fd);
    Record r;
    reader.Next(r);
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.offset(), 16u + 1 + 2 + 1 + 1);
    EXPECT_NE(std::string(e.what()).find("size: object of 1000000 bytes exceeds the"), std::string::npos) << e.what();
  }
  ::close(fd);
  ::unlink(name);
}

TEST(ReaderErrors, LengthsNear2To64AllocateNothing) {
  const uint64_t huge[] = {~0ull, ~0ull - 1, 1ull << 63, (1ull << 40) + 1};
  for (uint64_t n : huge) {
    uint64_t off = 0;
    // otherroot description, type nfields, memstats count, allocstack npcs.
    std::string err = ParseError(Hdr() + V(6) + V(n) + "abc", &off);
    EXPECT_EQ(off, 17u) << err;
    EXPECT_NE(err.find("description: length"), std::string::npos) << err;
    err = ParseError(Hdr() + V(7) + V(1) + V(8) + V(1) + "T" + V(0) + V(n), &off);
    EXPECT_EQ(off, 22u) << err;
    EXPECT_NE(err.find("nfields: length"), std::string::npos) << err;
    err = ParseError(Hdr() + V(16) + V(n), &off);
    EXPECT_NE(err.find("nstats: length"), std::string::npos) << err;
    err = ParseError(Hdr() + V(18) + V(1) + V(1) + V(n) + V(1), &off);
    EXPECT_NE(err.find("npcs: length"), std::string::npos) << err;
    // An object payload is never allocated from its size, even when streamed.
    err = ParseError(Hdr() + V(1) + V(16) + V(0) + V(0) + V(n) + "payload", &off);
    EXPECT_EQ(off, 16u + 1 + 1 + 1 + 1 + UvarintLen(n)) << err;
    EXPECT_NE(err.find("kind 1 (object): data: unexpected end of input"), std::string::npos) << err;
  }
}

TEST(ReaderErrors, StringLongerThanTheFileIsRejectedBeforeReading) {
  char path[] = "/tmp/libdump_reader_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string bytes = Hdr() + V(6) + V(1000) + "short" + V(0) + V(3);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  try {
    Reader reader(fd);
    Record r;
    reader.Next(r);
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.offset(), 17u);
    EXPECT_NE(std::string(e.what()).find("bytes left in the file"), std::string::npos) << e.what();
  }
  close(fd);
  unlink(path);
}

TEST(ReaderErrors, UnknownKinds) {
  for (uint64_t k : {uint64_t{0}, uint64_t{2}, uint64_t{kLastKind + 1}, uint64_t{1} << 50}) {
    uint64_t off = 0;
    const std::string err = ParseError(Hdr() + V(10) + V(0) + V(8) + V(0) + V(0) + V(0) + V(k) + V(3), &off);
    EXPECT_EQ(off, 22u) << err;
    EXPECT_NE(err.find("unknown record kind"), std::string::npos) << err;
  }
}

TEST(ReaderErrors, TrailingDataAfterEof) {
  uint64_t off = 0;
  const std::string err = ParseError(Hdr() + V(3) + "junk", &off);
  EXPECT_EQ(off, 17u);
  EXPECT_NE(err.find("kind 3 (eof): unexpected data after the eof record"), std::string::npos) << err;
  EXPECT_NE(ParseError(Hdr() + V(3) + V(3)), "");
}

TEST(ReaderErrors, FieldValuesOutOfRange) {
  uint64_t off = 0;
  EXPECT_NE(ParseError(Hdr() + V(10) + V(2), &off).find("endian"), std::string::npos);
  EXPECT_EQ(off, 17u);
  EXPECT_NE(ParseError(Hdr() + V(10) + V(0) + V(3), &off).find("ptrsize"), std::string::npos);
  EXPECT_NE(ParseError(Hdr() + V(1) + V(8) + V(0) + V(7) + V(0) + V(3), &off).find("kind: expected 0, 1 or 2"),
            std::string::npos);
  // Bools are 0 or 1; type field offsets increase.
  EXPECT_NE(ParseError(Hdr() + V(7) + V(1) + V(8) + V(1) + "T" + V(5) + V(0) + V(3)).find("efaceptr"),
            std::string::npos);
  EXPECT_NE(ParseError(Hdr() + V(7) + V(1) + V(8) + V(1) + "T" + V(0) + V(2) + V(0) + V(8) + V(0) + V(8) + V(3))
                .find("does not increase"),
            std::string::npos);
}

TEST(ReaderErrors, CorruptCompressedStream) {
  std::string z = "\x28\xb5\x2f\xfd" + std::string(64, '\x55');
  EXPECT_NE(ParseError(z).find("corrupt zstd stream"), std::string::npos) << ParseError(z);
  std::string g = "\x1f\x8b\x08\x00" + std::string(64, '\x55');
  EXPECT_NE(ParseError(g).find("gzip"), std::string::npos) << ParseError(g);
}

// As ZstdSink writes a dump: the data flushed in blocks, then an empty last
// block (3 bytes) to end the frame.
std::string Zstd(const std::string& in) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  std::string out(ZSTD_compressBound(in.size()) + 64, '\0');
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  ZSTD_inBuffer i{in.data(), in.size(), 0};
  EXPECT_EQ(ZSTD_compressStream2(c, &o, &i, ZSTD_e_flush), 0u);
  EXPECT_EQ(ZSTD_compressStream2(c, &o, &i, ZSTD_e_end), 0u);
  ZSTD_freeCCtx(c);
  out.resize(o.pos);
  return out;
}

std::string Gzip(const std::string& in) {
  std::string out;
  boost::iostreams::filtering_ostream z;
  z.push(boost::iostreams::gzip_compressor());
  z.push(boost::iostreams::back_inserter(out));
  z << in;
  z.reset();
  return out;
}

// A compressed dump cut short must not read as a shorter valid one; the
// error names the offset where the good data ends. Boost's own zstd filter
// ended such a stream quietly: a dump less its last block (or less the frame's
// empty last block header) was accepted whole.
TEST(ReaderErrors, TruncatedCompressedStreamsFailWhereTheGoodDataEnds) {
  const std::string dump = testing::SampleDump();
  const std::string z = Zstd(dump);
  ASSERT_EQ(ParseError(z), "");
  for (size_t cut : {size_t{1}, size_t{3}, z.size() / 2}) {
    uint64_t offset = 0;
    const std::string e = ParseError(z.substr(0, z.size() - cut), &offset);
    EXPECT_NE(e.find("corrupt zstd stream: truncated"), std::string::npos) << "cut " << cut << ": " << e;
    EXPECT_LE(offset, dump.size()) << e;
    if (cut == 3) {
      EXPECT_EQ(offset, dump.size()) << "all data decodes; only the frame's end is missing";
    }
  }
  const std::string g = Gzip(dump);
  ASSERT_EQ(ParseError(g), "");
  uint64_t offset = 0;
  const std::string e = ParseError(g.substr(0, g.size() - 5), &offset);
  EXPECT_NE(e.find("corrupt gzip stream: truncated or malformed trailer"), std::string::npos) << e;
  EXPECT_EQ(offset, dump.size()) << e;
  std::string bad_crc = g;
  bad_crc[g.size() - 6] ^= 0x5a;
  EXPECT_NE(ParseError(bad_crc).find("the CRC does not match the data"), std::string::npos) << ParseError(bad_crc);
}

TEST(ReaderErrors, PayloadLargerThanCallerAccepts) {
  const std::string dump = Hdr() + V(1) + V(16) + V(0) + V(0) + V(100) + std::string(100, 'x') + V(3);
  std::istringstream in(dump);
  Reader reader(in);
  Record r;
  ASSERT_TRUE(reader.Next(r));
  EXPECT_THROW(reader.Payload(99), FormatError);
}

}  // namespace
}  // namespace libdump::format
