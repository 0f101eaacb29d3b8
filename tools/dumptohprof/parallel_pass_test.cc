// ParallelPass: chunks come out in dump order, serial ones through the
// caller, and the first bad chunk in dump order is the error thrown, after
// the chunks before it, whichever worker fails first.
#include "parallel_pass.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "dump_catalog.h"
#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

namespace libdump::dumptohprof {
namespace {

namespace hp = format::hprof;

// 200 untyped objects of 64 zero bytes at 0x1000, 0x1100, ...: each record
// is 6 or 7 bytes of header (kind, addr in 2 or 3 bytes, type, kind, size)
// and the zeros.
class ZerosDump {
 public:
  ZerosDump() {
    char name[] = "/tmp/parallel_pass_testXXXXXX";
    ::close(::mkstemp(name));
    path_ = name;
    std::ofstream f(path_, std::ios::binary);
    format::OstreamSink sink(f);
    format::Writer w(sink);
    w.Header();
    const std::string zeros(64, '\0');
    for (uint64_t i = 0; i < 200; ++i) w.Object({0x1000 + 0x100 * i, 0, format::kObjRegular, 64}, zeros.data());
    w.Eof();
  }
  ~ZerosDump() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Fixture {
  explicit Fixture(const std::string& path) : catalog(700) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    {
      format::Reader reader(fd);
      catalog.Scan(reader, [](uint64_t) {});
    }
    ::close(fd);
    plan.catalog = &catalog;
    plan.untyped_array = 0x77;
  }
  DumpCatalog catalog;
  HeapPlan plan;
};

TEST(ParallelPass, ChunksInDumpOrderSerialOnesThroughTheCaller) {
  ZerosDump d;
  Fixture f(d.path());
  std::vector<Chunk> chunks = f.catalog.chunks();
  ASSERT_GT(chunks.size(), 10u);
  chunks[4].serial = chunks[7].serial = true;
  for (unsigned workers : {1, 2, 5}) {
    hp::StringOutput out;
    hp::Writer file(out);
    std::vector<uint64_t> done, serial;
    ObjectCounts counts;
    ParallelPass(
        d.path(), {}, chunks, f.plan, workers, file, [&](const Chunk& c) { serial.push_back(c.start); },
        [&](uint64_t end) { done.push_back(end); }, counts);
    EXPECT_EQ(serial, (std::vector<uint64_t>{chunks[4].start, chunks[7].start}));
    ASSERT_EQ(done.size(), chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) EXPECT_EQ(done[i], chunks[i].end);
    // Every object but those of the two serial chunks, each a byte[] of 64 zeros.
    uint64_t in_serial = 0;
    for (size_t i : {4, 7}) in_serial += (chunks[i].end - chunks[i].start + 35) / 71;
    EXPECT_EQ(counts.objects, 200 - in_serial);
    EXPECT_EQ(counts.untyped[0].bytes, 200 - in_serial);
  }
}

TEST(ParallelPass, TheFirstBadChunkInDumpOrderIsTheErrorThrown) {
  ZerosDump d;
  Fixture f(d.path());
  std::vector<Chunk> chunks = f.catalog.chunks();
  ASSERT_GT(chunks.size(), 10u);
  // Starting 7 bytes into a record lands in its zeros: kind 0, unknown.
  chunks[3].start += 7;
  chunks[8].start += 7;
  for (unsigned workers : {1, 2, 3}) {
    hp::StringOutput out;
    hp::Writer file(out);
    const uint64_t before = file.bytes_written();
    ObjectCounts counts;
    std::vector<uint64_t> done;
    try {
      ParallelPass(
          d.path(), {}, chunks, f.plan, workers, file, [](const Chunk&) {},
          [&](uint64_t end) { done.push_back(end); }, counts);
      FAIL() << "no error";
    } catch (const format::FormatError& e) {
      EXPECT_EQ(e.offset(), chunks[3].start) << workers;
      EXPECT_NE(std::string(e.what()).find("unknown record kind"), std::string::npos) << e.what();
    }
    EXPECT_EQ(done, (std::vector<uint64_t>{chunks[0].end, chunks[1].end, chunks[2].end}));
    EXPECT_GT(file.bytes_written(), before);
  }
}

}  // namespace
}  // namespace libdump::dumptohprof
