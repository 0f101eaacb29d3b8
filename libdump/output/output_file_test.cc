#include "output_file.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace libdump::output {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class PartialFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/output_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/out";
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_, path_;
};

TEST(ExpandPath, ReplacesPidTimeAndPercent) {
  EXPECT_EQ(ExpandPath("a.%p.b"), "a." + std::to_string(getpid()) + ".b");
  EXPECT_EQ(ExpandPath("100%%"), "100%");
  EXPECT_EQ(ExpandPath("x%"), "x%");
  EXPECT_EQ(ExpandPath("%q"), "q");
  const std::string t = ExpandPath("%t");
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.find_first_not_of("0123456789"), std::string::npos) << t;
}

TEST(ExpandPath, SaysWhetherThePathNamesThePid) {
  bool names_pid = true;
  ExpandPath("cpu.pprof", &names_pid);
  EXPECT_FALSE(names_pid);
  ExpandPath("cpu.%%p.pprof", &names_pid);
  EXPECT_FALSE(names_pid);
  ExpandPath("cpu.%p.pprof", &names_pid);
  EXPECT_TRUE(names_pid);
}

TEST_F(PartialFileTest, AppearsUnderItsNameOnlyWhenCommitted) {
  PartialFile f(path_, 0600);
  ASSERT_GE(f.fd(), 0);
  ASSERT_EQ(write(f.fd(), "abc", 3), 3);
  EXPECT_FALSE(Exists(path_));
  EXPECT_EQ(Read(path_ + ".partial"), "abc");
  ASSERT_EQ(f.Commit(), 0);
  EXPECT_EQ(Read(path_), "abc");
  EXPECT_FALSE(Exists(path_ + ".partial"));
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(PartialFileTest, AnUncommittedFileLeavesNothingAndKeepsTheOldOne) {
  std::ofstream(path_) << "old";
  {
    PartialFile f(path_, 0644);
    ASSERT_GE(f.fd(), 0);
    ASSERT_EQ(write(f.fd(), "new", 3), 3);
  }
  EXPECT_EQ(Read(path_), "old");
  EXPECT_FALSE(Exists(path_ + ".partial"));
}

TEST_F(PartialFileTest, AFailedRenameLeavesNothing) {
  ASSERT_EQ(mkdir(path_.c_str(), 0755), 0);  // a file cannot replace a directory
  PartialFile f(path_, 0644);
  ASSERT_GE(f.fd(), 0);
  EXPECT_EQ(f.Commit(), EISDIR);
  EXPECT_FALSE(Exists(path_ + ".partial"));
}

TEST_F(PartialFileTest, AnUncreatableFileReportsWhy) {
  PartialFile f(dir_ + "/no/such/dir", 0644);
  EXPECT_LT(f.fd(), 0);
  EXPECT_EQ(f.error(), ENOENT);
  EXPECT_EQ(f.Commit(), ENOENT);
}

}  // namespace
}  // namespace libdump::output
