// FdSink::Writev over short writes: the kernel may take part of a writev
// (a signal arrives mid-pipe-write, a file hits its size limit), and the sink
// must continue exactly where the kernel stopped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "libdump/format/sink.h"

namespace libdump::format {
namespace {

// Pieces of 1..9999 bytes with distinct contents; returns them concatenated.
std::string MakePieces(std::vector<std::string>& pieces, size_t count) {
  std::string all;
  for (size_t i = 0; i < count; ++i) {
    std::string p(1 + (i * 7919) % 9999, '\0');
    for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<char>((i + j * 13) & 0xff);
    all += p;
    pieces.push_back(std::move(p));
  }
  return all;
}

std::vector<iovec> Iovecs(std::vector<std::string>& pieces) {
  std::vector<iovec> iov;
  for (std::string& p : pieces) iov.push_back({p.data(), p.size()});
  return iov;
}

void Interrupt(int) {}

TEST(FdSinkWritev, ContinuesAfterSignalsCutAPipeWrite) {
  std::vector<std::string> pieces;
  const std::string want = MakePieces(pieces, 400);  // ~2 MB, far beyond a pipe's 64 KiB
  std::vector<iovec> iov = Iovecs(pieces);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  struct sigaction sa {}, old{};
  sa.sa_handler = Interrupt;  // no SA_RESTART: a blocked writev returns what it wrote
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);

  std::string got;
  std::thread reader([&] {
    char buf[1500];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
      if (n > 0) got.append(buf, static_cast<size_t>(n));
    }
  });
  std::atomic<bool> done{false};
  const pthread_t writer = pthread_self();
  std::thread nagger([&] {
    while (!done.load()) {
      pthread_kill(writer, SIGUSR1);
      usleep(20);
    }
  });
  FdSink sink(fds[1]);
  for (size_t at = 0; at < iov.size(); at += 100) sink.Writev(iov.data() + at, 100);
  done = true;
  nagger.join();
  close(fds[1]);
  reader.join();
  close(fds[0]);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(sink.error(), 0);
  EXPECT_EQ(sink.bytes_written(), want.size());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
}

TEST(FdSinkWritev, AFileSizeLimitKeepsTheExactPrefixAndReportsEFBIG) {
  std::vector<std::string> pieces;
  const std::string want = MakePieces(pieces, 50);
  std::vector<iovec> iov = Iovecs(pieces);
  char path[] = "/tmp/libdump_sink_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const size_t limit = want.size() / 3 + 5;  // inside some piece
  signal(SIGXFSZ, SIG_IGN);
  rlimit old{}, lim{limit, limit};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim.rlim_max = old.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  FdSink sink(fd);
  sink.Writev(iov.data(), static_cast<int>(iov.size()));
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_EQ(sink.error(), EFBIG);
  EXPECT_EQ(sink.bytes_written(), limit);
  std::string got(limit + 10, '\0');
  const ssize_t n = pread(fd, got.data(), got.size(), 0);
  close(fd);
  unlink(path);
  ASSERT_EQ(n, static_cast<ssize_t>(limit));
  got.resize(limit);
  EXPECT_TRUE(got == want.substr(0, limit));
}

}  // namespace
}  // namespace libdump::format
