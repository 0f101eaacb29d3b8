// Every level and worker count gives back the exact stream, read by the
// dump reader and by libzstd; failures come back as errors, not hangs.
#include "parallel_zstd_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/format/writer.h"

namespace libdump::heapdump {
namespace {

using format::FdSink;
using format::OstreamSink;
using format::Writer;

constexpr size_t kBlock = 64 << 10;  // small blocks: many frames from a small dump

// A dump of `objects` objects whose payloads are zeros, counters and
// pseudo-random bytes, so every level finds something to do.
template <class Out>
void WriteDump(Out& sink, int objects) {
  Writer w(sink, {.buffer_size = 16 << 10, .gather_min = 256});
  w.Header();
  w.Params({0, 8, 0, 0x1000, 0x100000});
  // Kept to the end: the writer sends payloads of 256 B and more from where they lie.
  std::vector<std::vector<uint8_t>> payloads(objects);
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < objects; ++i) {
    std::vector<uint8_t>& payload = payloads[i];
    payload.assign(16 + (i * 131) % 3000, 0);
    for (size_t k = 0; k < payload.size(); k += 16) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      payload[k] = static_cast<uint8_t>(i % 3 == 0 ? x : k);
    }
    w.Object({0x1000 + 0x1000 * static_cast<uint64_t>(i), 0, format::kObjRegular, payload.size()}, payload.data());
  }
  w.Eof();
}

std::string Raw(int objects) {
  std::ostringstream out;
  OstreamSink sink(out);
  WriteDump(sink, objects);
  return out.str();
}

std::string ReadFd(int fd) {
  std::string s;
  char buf[65536];
  for (off_t at = 0;;) {
    const ssize_t n = pread(fd, buf, sizeof buf, at);
    if (n <= 0) return s;
    s.append(buf, static_cast<size_t>(n));
    at += n;
  }
}

std::string Decompress(const std::string& z, int* frames) {
  *frames = 0;
  for (size_t at = 0; at < z.size(); ++(*frames)) {
    const size_t n = ZSTD_findFrameCompressedSize(z.data() + at, z.size() - at);
    if (ZSTD_isError(n)) return "bad frame";
    at += n;
  }
  std::string out(8 << 20, '\0');  // ZSTD_decompress goes through every frame
  const size_t n = ZSTD_decompress(out.data(), out.size(), z.data(), z.size());
  if (ZSTD_isError(n)) return ZSTD_getErrorName(n);
  out.resize(n);
  return out;
}

int MemFile() { return memfd_create("parallel_zstd", MFD_CLOEXEC); }

TEST(ParallelZstdSink, EveryLevelAndWorkerCountRoundTrips) {
  const int kObjects = 260;  // ~390 KB: six blocks
  const std::string raw = Raw(kObjects);
  ASSERT_GT(raw.size(), 5 * kBlock);
  for (int workers = 1; workers <= 4; ++workers) {
    for (int level = -5; level <= 19; ++level) {
      SCOPED_TRACE("workers " + std::to_string(workers) + " level " + std::to_string(level));
      const int fd = MemFile();
      ASSERT_GE(fd, 0);
      FdSink file(fd);
      {
        ParallelZstdSink z(file, level, workers, kBlock);
        ASSERT_TRUE(z.ok());
        WriteDump(z, kObjects);
        z.Finish();
        ASSERT_EQ(z.error(), 0) << std::strerror(z.error());
        EXPECT_EQ(z.bytes_written(), raw.size());
      }
      int frames = 0;
      const std::string got = Decompress(ReadFd(fd), &frames);
      size_t diff = 0;
      while (diff < got.size() && diff < raw.size() && got[diff] == raw[diff]) ++diff;
      EXPECT_TRUE(got == raw) << "not byte-identical: " << got.size() << " bytes for " << raw.size()
                              << ", the first difference at " << diff;
      EXPECT_EQ(frames, static_cast<int>((raw.size() + kBlock - 1) / kBlock));
      lseek(fd, 0, SEEK_SET);
      format::Reader reader(fd);
      format::Record r;
      int objects = 0;
      std::string payloads;
      while (reader.Next(r)) {
        if (r.kind != format::Kind::kObject) continue;
        ++objects;
        reader.ReadPayload([&](std::span<const uint8_t> c) { payloads.append(c.begin(), c.end()); });
      }
      EXPECT_EQ(objects, kObjects);
      size_t want = 0;
      for (int i = 0; i < kObjects; ++i) want += 16 + (i * 131) % 3000;
      EXPECT_EQ(payloads.size(), want);
      EXPECT_EQ(r.kind, format::Kind::kEof);
      close(fd);
    }
  }
}

TEST(ParallelZstdSink, AWriteErrorSticksAndTheWorkersEnd) {
  const int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(full, 0);
  FdSink file(full);
  ParallelZstdSink z(file, 1, 2, kBlock);
  ASSERT_TRUE(z.ok());
  WriteDump(z, 260);
  z.Finish();
  EXPECT_EQ(z.error(), ENOSPC);
  close(full);
  // Reaped by Finish: no child of this process is left.
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG | __WALL), -1);
  EXPECT_EQ(errno, ECHILD);
}

// A worker that dies (the OOM killer, a kill -9) costs the dump an error.
TEST(ParallelZstdSink, AWorkerKilledFailsTheDumpInsteadOfHanging) {
  const int fd = MemFile();
  FdSink file(fd);
  ParallelZstdSink z(file, 1, 2, kBlock);
  ASSERT_TRUE(z.ok());
  std::vector<uint8_t> block(kBlock / 2, 7);
  z.Write(block.data(), block.size());
  // The workers are this thread's only children.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/children", static_cast<int>(gettid()));
  FILE* f = std::fopen(path, "r");
  ASSERT_NE(f, nullptr);
  int victim = 0;
  ASSERT_EQ(std::fscanf(f, "%d", &victim), 1);
  std::fclose(f);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  for (int i = 0; i < 40; ++i) z.Write(block.data(), block.size());
  z.Finish();
  EXPECT_EQ(z.error(), EIO);
  close(fd);
}

}  // namespace
}  // namespace libdump::heapdump
