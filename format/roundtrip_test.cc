// Writer -> Reader equality for every record kind, through every container.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "testing/sample_records_testutil.h"

namespace libdump::format {
namespace {

using testing::SampleDump;
using testing::SampleRecord;
using testing::SampleRecords;

// Compares the member of `kind` only: the others are stale by design.
void ExpectSameRecord(const Record& want, const Record& got) {
  ASSERT_EQ(want.kind, got.kind);
  switch (want.kind) {
    case Kind::kObject: EXPECT_EQ(want.object, got.object); break;
    case Kind::kEof: break;
    case Kind::kStackRoot: EXPECT_EQ(want.stack_root, got.stack_root); break;
    case Kind::kDataRoot: EXPECT_EQ(want.data_root, got.data_root); break;
    case Kind::kOtherRoot: EXPECT_EQ(want.other_root, got.other_root); break;
    case Kind::kType: EXPECT_EQ(want.type, got.type); break;
    case Kind::kGoroutine: EXPECT_EQ(want.goroutine, got.goroutine); break;
    case Kind::kFrame: EXPECT_EQ(want.frame, got.frame); break;
    case Kind::kParams: EXPECT_EQ(want.params, got.params); break;
    case Kind::kFinalizer: EXPECT_EQ(want.finalizer, got.finalizer); break;
    case Kind::kItab: EXPECT_EQ(want.itab, got.itab); break;
    case Kind::kTypeFields: EXPECT_EQ(want.type_fields, got.type_fields); break;
    case Kind::kTypeInfo: EXPECT_EQ(want.type_info, got.type_info); break;
    case Kind::kThreadInfo: EXPECT_EQ(want.thread_info, got.thread_info); break;
    case Kind::kMemStats: EXPECT_EQ(want.mem_stats, got.mem_stats); break;
    case Kind::kModule: EXPECT_EQ(want.module, got.module); break;
    case Kind::kAllocStack: EXPECT_EQ(want.alloc_stack, got.alloc_stack); break;
  }
}

// Reads everything back and checks it equals `want` (extensions dropped when
// seed_only), objects' payloads included.
void ExpectReadsBack(Reader& reader, const std::vector<SampleRecord>& want, bool seed_only,
                     bool streamed_payloads) {
  Record r;
  size_t i = 0;
  while (reader.Next(r)) {
    while (i < want.size() && seed_only && IsExtension(want[i].record.kind)) ++i;
    ASSERT_LT(i, want.size());
    ExpectSameRecord(want[i].record, r);
    EXPECT_FALSE(seed_only && IsExtension(r.kind));
    if (r.kind == Kind::kObject) {
      std::string payload;
      if (streamed_payloads) {
        reader.ReadPayload([&](std::span<const uint8_t> c) { payload.append(c.begin(), c.end()); });
      } else {
        auto s = reader.Payload();
        payload.assign(s.begin(), s.end());
      }
      EXPECT_EQ(payload, want[i].payload) << "object at " << r.object.addr;
    }
    ++i;
  }
  EXPECT_EQ(i, want.size());
  EXPECT_EQ(r.kind, Kind::kEof);
}

TEST(RoundTrip, EveryRecordKind) {
  std::istringstream in(SampleDump());
  Reader reader(in);
  EXPECT_EQ(reader.compression(), Compression::kNone);
  EXPECT_EQ(reader.dialect(), Dialect::kLibdump);
  ExpectReadsBack(reader, SampleRecords(), false, false);
}

TEST(RoundTrip, TinyBuffersStreamPayloadsAcrossRefills) {
  std::istringstream in(SampleDump());
  Reader reader(in, {.buffer_size = 64});
  ExpectReadsBack(reader, SampleRecords(), false, true);
  std::istringstream in2(SampleDump());
  Reader reader2(in2, {.buffer_size = 64});
  ExpectReadsBack(reader2, SampleRecords(), false, false);  // Payload() larger than the buffer
}

TEST(RoundTrip, UnreadPayloadsAreSkipped) {
  std::istringstream in(SampleDump());
  Reader reader(in, {.buffer_size = 100});
  Record r;
  size_t objects = 0;
  while (reader.Next(r)) objects += r.kind == Kind::kObject;
  EXPECT_EQ(objects, 3u);
}

TEST(RoundTrip, SeedOnlyModeWritesNoExtension) {
  const std::string dump = SampleDump(/*seed_only=*/true);
  std::istringstream in(dump);
  Reader reader(in);
  ExpectReadsBack(reader, SampleRecords(), true, true);
  EXPECT_LT(dump.size(), SampleDump(false).size());
}

TEST(RoundTrip, FdWriterWithZstdAndRegularFileReader) {
  char path[] = "/tmp/libdump_roundtrip_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  {
    FdSink file(fd);
    ZstdSink zstd(file, 1);
    Writer w(zstd, {.buffer_size = 4096});
    testing::WriteSample(w, SampleRecords());
    zstd.Finish();
    ASSERT_EQ(w.error(), 0);
    ASSERT_EQ(zstd.error(), 0);
  }
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  Reader reader(fd);
  EXPECT_EQ(reader.compression(), Compression::kZstd);
  ExpectReadsBack(reader, SampleRecords(), false, true);
  close(fd);
  unlink(path);
}

TEST(RoundTrip, GzipInputFromAPipe) {
  char path[] = "/tmp/libdump_roundtrip_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string dump = SampleDump();
  ASSERT_EQ(write(fd, dump.data(), dump.size()), static_cast<ssize_t>(dump.size()));
  close(fd);
  FILE* p = popen(("gzip -c -n " + std::string(path)).c_str(), "r");
  ASSERT_NE(p, nullptr);
  {
    Reader reader(fileno(p));
    EXPECT_EQ(reader.compression(), Compression::kGzip);
    ExpectReadsBack(reader, SampleRecords(), false, false);
  }
  EXPECT_EQ(pclose(p), 0);
  unlink(path);
}

TEST(RoundTrip, RegularFileSkipsPayloadsBySeeking) {
  char path[] = "/tmp/libdump_roundtrip_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FdSink file(fd);
  Writer w(file);
  w.Header();
  std::vector<uint8_t> big(1 << 20, 0xab);
  for (uint64_t i = 0; i < 8; ++i) w.Object({0x100000 * (i + 1), 0, kObjRegular, big.size()}, big.data());
  w.Eof();
  ASSERT_EQ(w.error(), 0);
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  Reader reader(fd, {.buffer_size = 4096});
  Record r;
  uint64_t objects = 0;
  while (reader.Next(r)) objects += r.kind == Kind::kObject;
  EXPECT_EQ(objects, 8u);
  close(fd);
  unlink(path);
}

TEST(RoundTrip, WriteErrorsStickAndAreReported) {
  const int fd = open("/dev/full", O_WRONLY);
  ASSERT_GE(fd, 0);
  FdSink sink(fd);
  Writer w(sink, {.buffer_size = 4096});
  testing::WriteSample(w, SampleRecords());
  EXPECT_EQ(w.error(), ENOSPC);
  close(fd);
}

}  // namespace
}  // namespace libdump::format
