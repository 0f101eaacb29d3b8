#include "input_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace libdump::tools {
namespace {

// One directory for the whole binary, removed when it exits.
std::string Dir() {
  static const struct Scoped {
    std::string path = ::testing::TempDir() + "input_file_test_XXXXXX";
    Scoped() { EXPECT_NE(::mkdtemp(path.data()), nullptr); }
    ~Scoped() { std::filesystem::remove_all(path); }
  } dir;
  return dir.path;
}

std::string ReadPath(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

TEST(InputFile, RegularFileIsReadInPlace) {
  const std::string path = Dir() + "/a";
  std::ofstream(path) << "hello";
  InputFile in(path);
  in.MakeRereadable();
  EXPECT_EQ(in.name(), path);
  EXPECT_EQ(in.path(), path);
  EXPECT_TRUE(S_ISREG(in.stat().st_mode));
}

TEST(InputFile, MissingFileAndDirectoryAreInputErrors) {
  try {
    InputFile in(Dir() + "/missing");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "cannot open: No such file or directory");
  }
  try {
    InputFile in(Dir());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "is a directory");
  }
}

// The loaders' reopening: the head read by pread, `-` a file name like any
// other, a directory refused only when read (the loaders' messages).
TEST(InputFile, PathOnlyReadsTheHeadAndKeepsTheLoadersMessages) {
  const std::string path = Dir() + "/head";
  std::ofstream(path) << "JAVA PROFILE";
  InputFile in(path, InputFile::PathOnly{});
  uint8_t head[4];
  ASSERT_EQ(in.ReadHead(head, sizeof head), 4u);
  EXPECT_EQ(std::string(head, head + 4), "JAVA");
  EXPECT_GE(in.fd(), 0);
  try {
    InputFile dash("-", InputFile::PathOnly{});
    if (::access("-", F_OK) != 0) FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "cannot open: No such file or directory");
  }
  InputFile dir(Dir(), InputFile::PathOnly{});
  try {
    dir.ReadHead(head, sizeof head);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "cannot read: Is a directory");
  }
}

// A pipe on standard input, read twice: each path() open sees all of it.
TEST(InputFile, StdinPipeIsSpooledForTwoPasses) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const int saved = ::dup(STDIN_FILENO);
  ASSERT_EQ(::dup2(p[0], STDIN_FILENO), STDIN_FILENO);
  ::close(p[0]);
  const std::string bytes(3 << 20, 'x');  // more than a pipe holds, and than one read
  std::thread writer([&] {
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(p[1], bytes.data() + done, bytes.size() - done);
      ASSERT_GT(n, 0);
      done += static_cast<size_t>(n);
    }
    ::close(p[1]);
  });
  {
    InputFile in("-");
    in.MakeRereadable();
    writer.join();
    ::dup2(saved, STDIN_FILENO);
    EXPECT_EQ(in.name(), "<stdin>");
    EXPECT_TRUE(S_ISFIFO(in.stat().st_mode));
    EXPECT_EQ(ReadPath(in.path()), bytes);
    EXPECT_EQ(ReadPath(in.path()), bytes);
  }
  ::close(saved);
}

TEST(InputFile, StdinWithoutRereadingIsTheDescriptor) {
  const std::string path = Dir() + "/b";
  std::ofstream(path) << "abc";
  const int saved = ::dup(STDIN_FILENO);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_EQ(::dup2(fd, STDIN_FILENO), STDIN_FILENO);
  ::close(fd);
  InputFile in("-");
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  EXPECT_TRUE(in.path().empty());
  const int taken = in.TakeFd();
  char buf[8] = {};
  EXPECT_EQ(::read(taken, buf, sizeof buf), 3);
  EXPECT_STREQ(buf, "abc");
  ::close(taken);
}

}  // namespace
}  // namespace libdump::tools
