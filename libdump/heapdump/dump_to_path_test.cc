// DumpToPath in a process whose heap is libdump's: a burst of dumps keeps
// every one of them, each under its own name.
#include "dump_to_path.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "libdump/format/reader.h"

namespace libdump::heapdump {
namespace {

class DumpToPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dump_to_path_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // Whether path is a complete dump (ends with its EOF record), mode 0600.
  static bool CompleteDump(const std::string& path) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0777) != 0600) return false;
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return false;
    format::Reader reader(fd);
    format::Record r;
    bool eof = false;
    while (reader.Next(r)) eof = r.kind == format::Kind::kEof;
    close(fd);
    return eof;
  }

  std::string dir_;
};

constexpr int kBurst = 200;

// The pattern names nothing that changes between dumps (one-second %t is
// the same case): each dump still gets its own file, PATH, PATH.1, ...
TEST_F(DumpToPathTest, ABurstUnderOneNameKeepsEveryDump) {
  const std::string pattern = dir_ + "/heap.dump";
  for (int i = 0; i < kBurst; ++i) ASSERT_EQ(DumpToPath(pattern.c_str(), {}, "in a burst"), 0) << i;
  EXPECT_TRUE(CompleteDump(pattern));
  for (int i = 1; i < kBurst; ++i) EXPECT_TRUE(CompleteDump(pattern + "." + std::to_string(i))) << i;
  EXPECT_FALSE(CompleteDump(pattern + "." + std::to_string(kBurst)));
}

// %n numbers the process's dumps: 200 dumps, 200 consecutive numbers.
TEST_F(DumpToPathTest, TheSequenceNumberNamesEachDump) {
  const std::string pattern = dir_ + "/heap.%p.%n.dump";
  std::set<std::string> names;
  for (int i = 0; i < kBurst; ++i) {
    ASSERT_EQ(DumpToPath(pattern.c_str(), {}, "in a burst"), 0) << i;
  }
  int found = 0;
  for (uint64_t n = 1; n <= 2 * kBurst + 1; ++n) {
    const std::string path = ExpandDumpPath(pattern.c_str(), n);
    if (access(path.c_str(), F_OK) != 0) continue;
    ++found;
    EXPECT_TRUE(CompleteDump(path)) << path;
    EXPECT_EQ(access((path + ".1").c_str(), F_OK), -1) << "no collision expected with %n";
  }
  EXPECT_EQ(found, kBurst);
}

TEST_F(DumpToPathTest, ADumpRefusesALinkAtItsPartialName) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  const std::string path = dir_ + "/heap.dump";
  ASSERT_EQ(symlink(victim.c_str(), (path + ".partial").c_str()), 0);
  EXPECT_EQ(DumpToPath(path.c_str(), {}, "through a link"), EEXIST);
  std::ifstream in(victim);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

// A process killed while a compressed fork-snapshot dump is being written
// leaves PATH.partial only, and nothing goes on writing it: the snapshot and
// its compressors die with the process.
TEST_F(DumpToPathTest, AProcessKilledMidDumpLeavesOnlyThePartialFile) {
  const std::string pattern = dir_ + "/killed.dump";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // ~48 MB of varied words at zstd's slowest level: seconds of writing.
    std::vector<std::vector<uint64_t>*> keep;
    uint64_t x = 1;
    for (int i = 0; i < 3000; ++i) {
      auto* v = new std::vector<uint64_t>(2048);
      for (uint64_t& w : *v) w = (x = x * 6364136223846793005ull + 1442695040888963407ull) >> 40;
      keep.push_back(v);
    }
    HeapDumpOptions o;
    o.zstd = true;
    o.zstd_level = 19;
    o.fork_snapshot = true;
    o.threads = 2;
    _exit(DumpToPath(pattern.c_str(), o, "in the test"));
  }
  const std::string partial = pattern + ".partial";
  auto size = [&] {
    struct stat st;
    return stat(partial.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (size() <= 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GT(size(), 0) << "the dump did not start writing";
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the dump ended before the kill: make it longer";
  // Whatever was writing has a moment to die; then no process may hold the file.
  struct stat want;
  ASSERT_EQ(stat(partial.c_str(), &want), 0);
  auto holders = [&] {
    int n = 0;
    DIR* proc = opendir("/proc");
    while (dirent* p = proc ? readdir(proc) : nullptr) {
      if (p->d_name[0] < '0' || p->d_name[0] > '9') continue;
      const std::string fds = std::string("/proc/") + p->d_name + "/fd";
      DIR* d = opendir(fds.c_str());
      while (dirent* f = d ? readdir(d) : nullptr) {
        struct stat st;
        if (f->d_name[0] != '.' && stat((fds + "/" + f->d_name).c_str(), &st) == 0 && st.st_dev == want.st_dev &&
            st.st_ino == want.st_ino) {
          ++n;
        }
      }
      if (d) closedir(d);
    }
    if (proc) closedir(proc);
    return n;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (holders() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(holders(), 0) << "a process still writes the dump of a killed process";
  std::vector<std::string> names;
  DIR* d = opendir(dir_.c_str());
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  closedir(d);
  EXPECT_EQ(names, std::vector<std::string>{"killed.dump.partial"});
}

}  // namespace
}  // namespace libdump::heapdump
