// Reader::Range: a pass split between threads, each reading every other range
// of records, sees exactly the records, offsets and payloads of one reader
// reading the whole dump, however the ranges fall against the buffer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
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

// Objects of 0 to ~12 KiB with roots between them, so that records and
// payloads straddle small buffers.
std::string Dump() {
  return testing::StraddlingDump(300, 12288, [](size_t i, uint64_t addr, size_t) {
    Record root;
    root.kind = Kind::kDataRoot;
    root.data_root = {0x1000 + i, addr};
    return root;
  });
}

// offset -> "kind size payload-hash" of every record read.
using Seen = std::map<uint64_t, std::string>;

void Read(Reader& reader, Seen& seen) {
  Record r;
  for (size_t n = 0; reader.Next(r); ++n) {
    std::string s = std::to_string(static_cast<int>(r.kind));
    if (r.kind == Kind::kObject) {
      std::string bytes;
      if (n % 2 == 0) {
        const auto p = reader.Payload();
        bytes.assign(p.begin(), p.end());
      } else {
        reader.ReadPayload([&](std::span<const uint8_t> c) { bytes.append(c.begin(), c.end()); });
      }
      s += " " + std::to_string(r.object.size) + " " + std::to_string(std::hash<std::string>()(bytes));
    }
    ASSERT_TRUE(seen.emplace(r.offset, s).second) << "record at " << r.offset << " read twice";
  }
}

TEST(ReaderRange, AlternateRangesOnTwoReadersSeeWhatOneReaderSees) {
  const std::string dump = Dump();
  TempFile f(dump);
  Seen want;
  {
    Reader whole(f.fd());
    Read(whole, want);
  }
  std::vector<uint64_t> bounds;
  for (const auto& [offset, s] : want) bounds.push_back(offset);
  bounds.push_back(dump.size());
  for (size_t every : {1, 2, 7, 40}) {
    for (ReaderOptions options : {ReaderOptions{.buffer_size = 4096}, ReaderOptions{.buffer_size = 1 << 20},
                                  ReaderOptions{.map_file = true, .map_window = 8192}}) {
      Seen got;
      for (int worker = 0; worker < 2; ++worker) {
        TempFile g(dump);
        Reader reader(g.fd(), options);
        for (size_t i = worker * every; i + 1 < bounds.size(); i += 2 * every) {
          const size_t j = std::min(i + every, bounds.size() - 1);
          reader.Range(bounds[i], bounds[j]);
          Read(reader, got);
          EXPECT_EQ(reader.offset(), bounds[j]) << "every " << every;
        }
      }
      EXPECT_EQ(got, want) << "every " << every << " buffer " << options.buffer_size << " mapped "
                           << options.map_file;
    }
  }
}

TEST(ReaderRange, AnUncompressedFileIsReadNoFurtherThanTheEnd) {
  const std::string dump = Dump();
  TempFile f(dump);
  Seen all;
  {
    Reader whole(f.fd());
    Read(whole, all);
  }
  ASSERT_EQ(lseek(f.fd(), 0, SEEK_SET), 0);
  const auto start = all.upper_bound(3 * 4096);  // past what the header's read buffered
  const auto end = std::next(start, 3);
  Reader reader(f.fd(), {.buffer_size = 4096});
  reader.Range(start->first, end->first);
  Seen got;
  Read(reader, got);
  EXPECT_EQ(got, Seen(start, end));
  EXPECT_EQ(lseek(f.fd(), 0, SEEK_CUR), static_cast<off_t>(end->first));
}

TEST(ReaderRange, CompressedInputIsReadThroughToTheStart) {
  std::ostringstream os;
  {
    OstreamSink file(os);
    ZstdSink zstd(file, 1);
    const std::string plain = Dump();
    zstd.Write(plain.data(), plain.size());
    zstd.Finish();
  }
  const std::string plain = Dump();
  TempFile whole(plain);
  Seen want;
  {
    Reader reader(whole.fd());
    Read(reader, want);
  }
  const auto mid = std::next(want.begin(), static_cast<long>(want.size() / 2));
  Seen want_tail(mid, want.end());
  TempFile f(os.str());
  Reader reader(f.fd());
  reader.Range(mid->first, 0);
  Seen got;
  Read(reader, got);
  EXPECT_EQ(got, want_tail);
}

TEST(ReaderRange, ARangeBehindTheReaderIsALogicError) {
  TempFile f(Dump());
  Reader reader(f.fd());
  Record r;
  ASSERT_TRUE(reader.Next(r));
  EXPECT_THROW(reader.Range(0, 0), std::logic_error);
}

}  // namespace
}  // namespace libdump::format
