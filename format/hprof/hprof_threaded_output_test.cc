// ThreadedFdOutput writes what a synchronous output writes, in order, with
// rewrites after the bytes they rewrite, and reports failed writes.
#include "libdump/format/hprof_threaded_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <system_error>
#include <vector>

#include "libdump/format/hprof_writer.h"

namespace libdump::format::hprof {
namespace {

// A heap of many small records through a tiny buffer, so that buffers change
// hands thousands of times and segment lengths are patched after flushes.
void WriteHeap(Output& out) {
  Writer w(out, {.max_segment = 5000, .buffer_size = 256});
  w.Utf8(100, "a name");
  std::vector<uint8_t> data(24);
  for (uint64_t i = 0; i < 3000; ++i) {
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<uint8_t>(i * 31 + k);
    w.Instance(0x1000 + 32 * i, kEmptyTrace, 0x10, data);
    if (i % 97 == 0) w.RootUnknown(0x1000 + 32 * i);
    if (i % 500 == 0) w.Raw({});  // no-op calls between records are fine
  }
  std::vector<uint8_t> big(1000, 0xab);  // larger than the buffer: written directly
  w.BeginPrimitiveArray(0x900000, kEmptyTrace, Type::kByte, 1000);
  w.Raw(big);
  w.HeapDumpEnd();
}

std::string ReadAll(int fd) {
  std::string out(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
  EXPECT_EQ(pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
  return out;
}

TEST(ThreadedFdOutput, WritesTheSameBytesAsASynchronousOutput) {
  StringOutput want;
  WriteHeap(want);
  char path[] = "/tmp/libdump_hprof_threaded_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  {
    ThreadedFdOutput out(fd);
    WriteHeap(out);
  }
  EXPECT_EQ(ReadAll(fd), want.data());
  close(fd);
  unlink(path);
}

// A conversion that fails half-way destroys its Writer while the output may
// still be writing one of the Writer's buffers: the Writer waits for it (ASan
// would see the buffer freed under the write), and what reached the file is
// a prefix of the same records written synchronously.
TEST(ThreadedFdOutput, AnAbandonedWriterWaitsForItsBuffers) {
  const auto abandon = [](Output& out) {
    Writer w(out, {.buffer_size = 4096});
    const std::vector<uint8_t> data(1000, 0x5a);
    for (uint64_t i = 0; i < 200; ++i) w.Instance(0x1000 + 0x1000 * i, kEmptyTrace, 0x10, data);
  };
  StringOutput want;
  abandon(want);
  char path[] = "/tmp/libdump_hprof_threaded_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  {
    ThreadedFdOutput out(fd);
    abandon(out);
  }
  const std::string got = ReadAll(fd);
  EXPECT_GT(got.size(), 150u * 1000);
  EXPECT_EQ(got, want.data().substr(0, got.size()));
  close(fd);
  unlink(path);
}

TEST(ThreadedFdOutput, AFailedWriteIsThrownBySyncOrTheNextWrite) {
  const int fd = open("/dev/null", O_RDONLY);  // writes fail with EBADF
  ASSERT_GE(fd, 0);
  const uint8_t byte = 1;
  {
    ThreadedFdOutput out(fd);
    out.Write(&byte, 1);  // returns before the write fails
    try {
      out.Sync();
      ADD_FAILURE() << "no error";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EBADF);
    }
    EXPECT_THROW(out.Write(&byte, 1), std::system_error);
  }
  {
    ThreadedFdOutput out(fd);
    Writer w(out);
    EXPECT_THROW(w.HeapDumpEnd(), std::system_error);  // HeapDumpEnd flushes and syncs
  }
  close(fd);
}

}  // namespace
}  // namespace libdump::format::hprof
