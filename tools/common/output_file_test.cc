#include "output_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace libdump::tools {
namespace {

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "output_file_test_XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir_.c_str());
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
  }
  static void Write(const std::string& path, const std::string& bytes) { std::ofstream(path) << bytes; }
  // The OutputError message of writing `bytes` to `spec`, "" when it worked.
  static std::string Attempt(const OutputSpec& spec, const std::string& bytes = "new") {
    try {
      OutputFile f(spec);
      f.Write(bytes);
      f.Commit();
      return "";
    } catch (const OutputError& e) {
      return e.what();
    }
  }

  std::string dir_;
};

TEST_F(OutputFileTest, NewFileWithTheGivenModeAndNoTemporaryLeft) {
  EXPECT_EQ(Attempt({Path("out"), false, 0640, nullptr}, "bytes"), "");
  EXPECT_EQ(Read(Path("out")), "bytes");
  struct stat st;
  ASSERT_EQ(::stat(Path("out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(Names(), std::vector<std::string>{"out"});
}

TEST_F(OutputFileTest, ExistingFileNeedsForce) {
  Write(Path("out"), "old");
  EXPECT_EQ(Attempt({Path("out"), false, 0600, nullptr}), Path("out") + ": already exists; --force replaces it");
  EXPECT_EQ(Read(Path("out")), "old");
  EXPECT_EQ(Attempt({Path("out"), true, 0600, nullptr}), "");
  EXPECT_EQ(Read(Path("out")), "new");
  EXPECT_EQ(Names(), std::vector<std::string>{"out"});
}

TEST_F(OutputFileTest, SymlinkIsNeverReplacedNorFollowed) {
  Write(Path("target"), "precious");
  ASSERT_EQ(::symlink(Path("target").c_str(), Path("link").c_str()), 0);
  EXPECT_EQ(Attempt({Path("link"), true, 0600, nullptr}),
            Path("link") + ": is a symbolic link; not replaced (name its target instead)");
  EXPECT_EQ(Read(Path("target")), "precious");
  struct stat st;
  ASSERT_EQ(::lstat(Path("link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Names(), (std::vector<std::string>{"link", "target"}));
}

TEST_F(OutputFileTest, DeviceAndFifoAreNeverReplaced) {
  EXPECT_EQ(Attempt({"/dev/null", true, 0600, nullptr}),
            "/dev/null: is not a regular file; not replaced (write to '-' and redirect)");
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  EXPECT_NE(Attempt({Path("fifo"), true, 0600, nullptr}), "");
  ASSERT_EQ(::lstat(Path("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(OutputFileTest, InputIsNeverTheOutputEvenWithForceOrAHardLink) {
  Write(Path("in"), "dump");
  ASSERT_EQ(::link(Path("in").c_str(), Path("alias").c_str()), 0);
  struct stat in;
  ASSERT_EQ(::stat(Path("in").c_str(), &in), 0);
  EXPECT_EQ(Attempt({Path("in"), true, 0600, &in}), Path("in") + ": is the input file");
  EXPECT_EQ(Attempt({Path("alias"), true, 0600, &in}), Path("alias") + ": is the input file");
  EXPECT_EQ(Read(Path("in")), "dump");
}

TEST_F(OutputFileTest, UncommittedOutputLeavesNothing) {
  {
    OutputFile f({Path("out"), false, 0600, nullptr});
    f.Write("partial");
  }
  EXPECT_TRUE(Names().empty());
}

TEST_F(OutputFileTest, FileCreatedDuringTheRunIsNotReplacedWithoutForce) {
  OutputFile f({Path("out"), false, 0600, nullptr});
  f.Write("new");
  Write(Path("out"), "theirs");
  try {
    f.Commit();
    FAIL() << "committed over a file that appeared";
  } catch (const OutputError& e) {
    EXPECT_EQ(std::string(e.what()), Path("out") + ": already exists; --force replaces it");
  }
  EXPECT_EQ(Read(Path("out")), "theirs");
  EXPECT_EQ(Names(), std::vector<std::string>{"out"});
}

TEST_F(OutputFileTest, TemporaryIsRemovedOnSigtermAndSigint) {
  for (int sig : {SIGTERM, SIGINT}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      OutputFile f({Path("out"), false, 0600, nullptr});
      f.Write("partial");
      ::raise(sig);
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    EXPECT_TRUE(Names().empty()) << Names().front();
  }
}

TEST_F(OutputFileTest, DashIsStandardOutput) {
  OutputFile f({"-", false, 0600, nullptr});
  EXPECT_TRUE(f.is_stdout());
  EXPECT_EQ(f.fd(), STDOUT_FILENO);
  f.Commit();
  EXPECT_TRUE(Names().empty());
}

TEST(OutputMode, FollowsTheInputWithoutExecute) {
  struct stat st {};
  st.st_mode = S_IFREG | 0600;
  EXPECT_EQ(OutputModeFor(st), 0600u);
  st.st_mode = S_IFREG | 0755;
  EXPECT_EQ(OutputModeFor(st), 0644u);
}

}  // namespace
}  // namespace libdump::tools
