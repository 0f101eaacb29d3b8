#include "platform/output/output_file.h"

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

TEST(ExpandPath, ReplacesTheSequenceNumber) {
  EXPECT_EQ(ExpandPath("heap.%n.dump", nullptr, 42), "heap.42.dump");
  EXPECT_EQ(ExpandPath("heap.%n.dump"), "heap.1.dump");
  EXPECT_EQ(ExpandPath("heap.%%n", nullptr, 42), "heap.%n");
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

mode_t Mode(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

// Another local user plants a link at PATH.partial in a shared directory:
// the output must not go through it into the file it names.
TEST_F(PartialFileTest, RefusesALinkPlantedAtThePartialName) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  ASSERT_EQ(symlink(victim.c_str(), (path_ + ".partial").c_str()), 0);
  {
    PartialFile f(path_, 0600);
    EXPECT_LT(f.fd(), 0);
    EXPECT_EQ(f.error(), EEXIST);
    EXPECT_EQ(f.Commit(), EEXIST);
  }
  EXPECT_EQ(Read(victim), "precious");
  EXPECT_TRUE(S_ISLNK(Mode(path_ + ".partial"))) << "a refused partial is not ours to remove";
  EXPECT_FALSE(Exists(path_));
}

// A dangling link is refused too (O_CREAT alone would create its target).
TEST_F(PartialFileTest, RefusesADanglingLinkAtThePartialName) {
  const std::string target = dir_ + "/created-through-the-link";
  ASSERT_EQ(symlink(target.c_str(), (path_ + ".partial").c_str()), 0);
  PartialFile f(path_, 0600);
  EXPECT_LT(f.fd(), 0);
  EXPECT_FALSE(Exists(target));
}

// An existing partial file (another's, readable by all) is neither reused
// with its mode nor removed.
TEST_F(PartialFileTest, RefusesAnExistingPartialFile) {
  std::ofstream(path_ + ".partial") << "theirs";
  ASSERT_EQ(chmod((path_ + ".partial").c_str(), 0644), 0);
  {
    PartialFile f(path_, 0600);
    EXPECT_LT(f.fd(), 0);
    EXPECT_EQ(f.error(), EEXIST);
  }
  EXPECT_EQ(Read(path_ + ".partial"), "theirs");
  EXPECT_EQ(Mode(path_ + ".partial") & 0777, 0644u);
}

TEST_F(PartialFileTest, TheModeIsTheCallersWhateverTheUmask) {
  const mode_t old = umask(0);
  PartialFile f(path_, 0600);
  umask(old);
  ASSERT_GE(f.fd(), 0);
  ASSERT_EQ(f.Commit(), 0);
  EXPECT_EQ(Mode(path_) & 0777, 0600u);
}

TEST_F(PartialFileTest, KeepingTakesTheNextFreeName) {
  std::ofstream(path_) << "first";
  std::ofstream(path_ + ".1") << "second";
  PartialFile f(path_, 0600, PartialFile::Existing::kKeep);
  ASSERT_GE(f.fd(), 0);
  ASSERT_EQ(write(f.fd(), "third", 5), 5);
  ASSERT_EQ(f.Commit(), 0);
  EXPECT_EQ(f.path(), path_ + ".2");
  EXPECT_EQ(Read(path_), "first");
  EXPECT_EQ(Read(path_ + ".1"), "second");
  EXPECT_EQ(Read(path_ + ".2"), "third");
  EXPECT_FALSE(Exists(path_ + ".partial"));
}

// A link at PATH is kept too: the committed file takes PATH.1, and the
// link's target is untouched.
TEST_F(PartialFileTest, KeepingNeverWritesThroughALinkAtThePath) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  ASSERT_EQ(symlink(victim.c_str(), path_.c_str()), 0);
  PartialFile f(path_, 0600, PartialFile::Existing::kKeep);
  ASSERT_GE(f.fd(), 0);
  ASSERT_EQ(write(f.fd(), "dump", 4), 4);
  ASSERT_EQ(f.Commit(), 0);
  EXPECT_EQ(f.path(), path_ + ".1");
  EXPECT_EQ(Read(victim), "precious");
  EXPECT_TRUE(S_ISLNK(Mode(path_)));
}

TEST_F(PartialFileTest, ReplacingReplacesALinkNotItsTarget) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  ASSERT_EQ(symlink(victim.c_str(), path_.c_str()), 0);
  PartialFile f(path_, 0600);
  ASSERT_GE(f.fd(), 0);
  ASSERT_EQ(write(f.fd(), "profile", 7), 7);
  ASSERT_EQ(f.Commit(), 0);
  EXPECT_EQ(Read(victim), "precious");
  EXPECT_TRUE(S_ISREG(Mode(path_)));
  EXPECT_EQ(Read(path_), "profile");
}

}  // namespace
}  // namespace libdump::output
