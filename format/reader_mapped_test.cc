// ReaderOptions::map_file: reading a file in place through a sliding window
// must see exactly what reading it into the buffer sees — records, offsets,
// payloads and errors — wherever records straddle the window's edges.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "testing/sample_records_testutil.h"
#include "testing/temp_file_testutil.h"

namespace libdump::format {
namespace {

constexpr size_t kSmallWindow = 8192;  // two pages: every few records cross an edge

// Objects of sizes 0 .. 3 windows, with a string record between them, so that
// headers, strings and payloads all fall across window edges somewhere.
std::string StraddlingDump() {
  return testing::StraddlingDump(200, 3 * kSmallWindow, [](size_t i, uint64_t addr, size_t size) {
    Record s;
    s.kind = Kind::kOtherRoot;
    s.other_root = {std::string(i * 37 % 5000, 'd'), addr + size + 16};
    return s;
  });
}

// What a reader sees, as text: every record's offset and kind, object
// payloads (alternately through Payload() and ReadPayload()), strings, and the
// error that ends the read, if any.
std::string Trace(Reader& reader) {
  std::string out;
  try {
    Record r;
    for (size_t n = 0; reader.Next(r); ++n) {
      out += std::to_string(r.offset) + " " + std::to_string(static_cast<int>(r.kind));
      if (r.kind == Kind::kObject) {
        std::string bytes;
        if (n % 3 == 0) {
          const auto s = reader.Payload();
          bytes.assign(s.begin(), s.end());
        } else if (n % 3 == 1) {
          reader.ReadPayload([&](std::span<const uint8_t> c) { bytes.append(c.begin(), c.end()); });
        }  // else skipped
        out += " " + std::to_string(r.object.size) + " " + std::to_string(std::hash<std::string>()(bytes));
      }
      if (r.kind == Kind::kOtherRoot) out += " " + r.other_root.description;
      out += "\n";
    }
  } catch (const FormatError& e) {
    out += std::string("error ") + e.what() + "\n";
  }
  return out;
}

// The same file read into the buffer (a regular file too: its size bounds
// lengths up front, which changes some errors from those of a stream).
std::string ReadBuffered(const std::string& bytes) {
  TempFile f(bytes);
  try {
    Reader reader(f.fd(), {.buffer_size = 4096});
    return Trace(reader);
  } catch (const FormatError& e) {  // the header
    return std::string("error ") + e.what() + "\n";
  }
}

std::string ReadMapped(const std::string& bytes, size_t window = kSmallWindow) {
  TempFile f(bytes);
  try {
    Reader reader(f.fd(), {.map_file = true, .map_window = window});
    return Trace(reader);
  } catch (const FormatError& e) {
    return std::string("error ") + e.what() + "\n";
  }
}

TEST(ReaderMapped, SameRecordsPayloadsAndOffsetsAcrossWindowEdges) {
  const std::string dump = StraddlingDump();
  ASSERT_GT(dump.size(), 50 * kSmallWindow);
  const std::string want = ReadBuffered(dump);
  ASSERT_EQ(want.find("error"), std::string::npos) << want;
  EXPECT_EQ(ReadMapped(dump), want);
  EXPECT_EQ(ReadMapped(dump, 1 << 20), want);
}

TEST(ReaderMapped, PayloadOfAnObjectWithinTheWindowPointsIntoTheFile) {
  const std::string dump = testing::SampleDump();
  TempFile f(dump);
  Reader reader(f.fd(), {.map_file = true});
  Record r;
  while (reader.Next(r) && !(r.kind == Kind::kObject && r.object.size == 3000)) {
  }
  ASSERT_EQ(r.object.size, 3000u);
  const uint64_t at = reader.offset();
  const auto s = reader.Payload();
  ASSERT_EQ(s.size(), 3000u);
  EXPECT_EQ(std::string(s.begin(), s.end()), dump.substr(at, 3000));
}

TEST(ReaderMapped, SameErrorsForEveryTruncationAndCorruption) {
  const std::string dump = StraddlingDump().substr(0, 6 * kSmallWindow);
  for (size_t k = 0; k < dump.size(); k += (k < 64 ? 1 : 61)) {
    const std::string cut = dump.substr(0, k);
    ASSERT_EQ(ReadMapped(cut), ReadBuffered(cut)) << "cut at " << k;
  }
  std::string bad = StraddlingDump();
  bad[3 * kSmallWindow] = '\xff';
  bad[3 * kSmallWindow + 1] = '\xff';
  EXPECT_EQ(ReadMapped(bad), ReadBuffered(bad));
}

TEST(ReaderMapped, CompressedInputIsStillDecompressed) {
  std::ostringstream os;
  {
    OstreamSink file(os);
    ZstdSink zstd(file, 1);
    Writer w(zstd);
    testing::WriteSample(w, testing::SampleRecords());
    w.Flush();
    zstd.Finish();
  }
  TempFile f(os.str());
  Reader reader(f.fd(), {.map_file = true});
  EXPECT_EQ(reader.compression(), Compression::kZstd);
  EXPECT_EQ(Trace(reader), ReadBuffered(testing::SampleDump()));
}

}  // namespace
}  // namespace libdump::format
