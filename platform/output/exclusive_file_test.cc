#include "platform/output/exclusive_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace libdump::output {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

class ExclusiveFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/exclusive_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
};

TEST_F(ExclusiveFileTest, CreatesANewFileWithTheMode) {
  const std::string p = dir_ + "/new";
  const mode_t old = umask(0);
  const int fd = CreateExclusive(p.c_str(), 0640);
  umask(old);
  ASSERT_GE(fd, 0);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  close(fd);
}

TEST_F(ExclusiveFileTest, RefusesAFileOrALinkAlreadyThere) {
  const std::string file = dir_ + "/file", target = dir_ + "/target", link = dir_ + "/link",
                    dangling = dir_ + "/dangling";
  Write(file, "mine");
  Write(target, "theirs");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  ASSERT_EQ(symlink((dir_ + "/nowhere").c_str(), dangling.c_str()), 0);
  for (const std::string& p : {file, link, dangling}) {
    errno = 0;
    EXPECT_EQ(CreateExclusive(p.c_str(), 0600), -1) << p;
    EXPECT_EQ(errno, EEXIST) << p;
  }
  EXPECT_EQ(Read(file), "mine");
  EXPECT_EQ(Read(target), "theirs");
  EXPECT_FALSE(Exists(dir_ + "/nowhere"));
}

TEST_F(ExclusiveFileTest, RenameNoReplaceMovesOnlyOntoAFreeName) {
  const std::string from = dir_ + "/from", to = dir_ + "/to";
  Write(from, "new");
  EXPECT_EQ(RenameNoReplace(from.c_str(), to.c_str()), 0);
  EXPECT_FALSE(Exists(from));
  EXPECT_EQ(Read(to), "new");

  Write(from, "newer");
  EXPECT_EQ(RenameNoReplace(from.c_str(), to.c_str()), EEXIST);
  EXPECT_EQ(Read(from), "newer");
  EXPECT_EQ(Read(to), "new");

  // A link at the name is not replaced either, nor written through.
  const std::string link = dir_ + "/link";
  ASSERT_EQ(symlink(to.c_str(), link.c_str()), 0);
  EXPECT_EQ(RenameNoReplace(from.c_str(), link.c_str()), EEXIST);
  EXPECT_EQ(Read(to), "new");
  EXPECT_EQ(RenameNoReplace((dir_ + "/absent").c_str(), (dir_ + "/x").c_str()), ENOENT);
}

TEST_F(ExclusiveFileTest, CloseAndRemoveLeavesNothing) {
  const std::string p = dir_ + "/temp";
  const int fd = CreateExclusive(p.c_str(), 0600);
  ASSERT_GE(fd, 0);
  CloseAndRemove(fd, p.c_str());
  EXPECT_FALSE(Exists(p));
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);  // closed
  Write(p, "x");
  CloseAndRemove(-1, p.c_str());
  EXPECT_FALSE(Exists(p));
}

}  // namespace
}  // namespace libdump::output
