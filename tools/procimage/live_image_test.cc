#include "live_image.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "testing/pattern.h"
#include "testing/target_process.h"

namespace libdump::procimage {
namespace {

using testing::PatternByte;
using testing::TargetProcess;

// The scheduler's letter for a thread: 't' while it is stopped under ptrace.
char State(int pid, int tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

std::string ErrorOf(int pid) {
  try {
    LiveImage::Attach(pid);
  } catch (const LiveError& e) {
    return e.what();
  }
  return "(attached)";
}

TEST(LiveImage, ReadsTheRunningTargetAndLetsItGo) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  {
    auto image = LiveImage::Attach(target.pid());
    EXPECT_TRUE(image->attached());
    ASSERT_EQ(image->Threads().size(), 4u);
    std::set<int> tids, want(target.tids.begin(), target.tids.end());
    for (const auto& t : image->Threads()) {
      tids.insert(t.tid);
      const ImageMapping* m = image->FindMapping(t.sp());
      ASSERT_NE(m, nullptr);
      EXPECT_TRUE(m->writable);
      EXPECT_NE(t.fs_base(), 0u);
      EXPECT_EQ(t.name, "procimage_targe");  // each thread's comm
    }
    EXPECT_EQ(tids, want);
    EXPECT_EQ(image->Command(), "procimage_targe");
    EXPECT_EQ(image->Describe(), "process " + std::to_string(target.pid()));

    std::vector<uint8_t> got(target.buffer_size);
    ASSERT_EQ(image->Read(target.buffer_addr, got.data(), got.size()), got.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], PatternByte(i)) << i;
    char rodata[32] = {};
    ASSERT_EQ(image->Read(target.rodata_addr, rodata, sizeof rodata), sizeof rodata);
    EXPECT_STREQ(rodata, "libdump procimage rodata marker");
    EXPECT_EQ(image->Read(0, got.data(), 8), 0u);

    const std::string exe = std::filesystem::canonical(IMAGE_TARGET).string();
    const ImageModule* main = image->FindModule(target.rodata_addr);
    ASSERT_NE(main, nullptr);
    EXPECT_EQ(main->path, exe);
    EXPECT_TRUE(main->executable);
    EXPECT_TRUE(main->file_matches);
    EXPECT_FALSE(main->build_id.empty());
    bool libc = false;
    for (const auto& m : image->Modules())
      if (std::filesystem::path(m.path).filename() == "libc.so.6") libc = !m.build_id.empty() && m.file_matches;
    EXPECT_TRUE(libc);
    for (const auto& d : image->Damage()) ADD_FAILURE() << d;

    // Every thread is stopped while attached, none after.
    for (const int tid : target.tids) EXPECT_EQ(State(target.pid(), tid), 't') << tid;
    image->Detach();
    for (const int tid : target.tids) EXPECT_NE(State(target.pid(), tid), 't') << tid;
    EXPECT_FALSE(image->attached());
    EXPECT_GT(image->StoppedFor().count(), 0);
    EXPECT_LT(image->StoppedFor(), std::chrono::seconds(2));
  }
  EXPECT_TRUE(target.Ping());
  EXPECT_TRUE(target.Ping());
  const int status = target.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(LiveImage, TheDestructorLetsItGo) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  std::chrono::nanoseconds stopped{};
  {
    auto image = LiveImage::Attach(target.pid());
    stopped = image->StoppedFor();
    EXPECT_EQ(State(target.pid(), target.tids[3]), 't');
  }
  for (const int tid : target.tids) EXPECT_NE(State(target.pid(), tid), 't') << tid;
  EXPECT_GT(stopped.count(), 0);
  EXPECT_TRUE(target.Ping());
}

TEST(LiveImage, AttachingTwiceFailsAndLeavesTheFirstAlone) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  {
    auto first = LiveImage::Attach(target.pid());
    EXPECT_EQ(ErrorOf(target.pid()),
              "process " + std::to_string(target.pid()) + ": already traced by process " + std::to_string(getpid()));
    uint8_t b = 0;
    ASSERT_TRUE(first->ReadValue(target.buffer_addr + 7, &b));
    EXPECT_EQ(b, PatternByte(7));
  }
  EXPECT_TRUE(target.Ping());
}

TEST(LiveImage, AProcessKilledMidReadGivesShortReads) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  auto image = LiveImage::Attach(target.pid());
  std::vector<uint8_t> got(target.buffer_size);
  ASSERT_EQ(image->Read(target.buffer_addr, got.data(), got.size()), got.size());
  ASSERT_EQ(kill(target.pid(), SIGKILL), 0);
  // Its memory goes with it; the read says so by its length, and letting go
  // of a dead process is no error.
  size_t n = got.size();
  for (int i = 0; i < 1000 && n != 0; ++i) {
    n = image->Read(target.buffer_addr, got.data(), got.size());
    usleep(1000);
  }
  EXPECT_EQ(n, 0u);
  image->Detach();
  EXPECT_FALSE(image->attached());
  const int status = target.Stop();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST(LiveImage, AProcessThatHasExitedIsAClearError) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  // Exited, not yet reaped: a zombie.
  for (int i = 0; i < 500; ++i) {
    siginfo_t info = {};
    if (waitid(P_PID, child, &info, WEXITED | WNOWAIT | WNOHANG) == 0 && info.si_pid == child) break;
    usleep(1000);
  }
  EXPECT_EQ(ErrorOf(child).rfind("process " + std::to_string(child) + ": has exited (Z", 0), 0u) << ErrorOf(child);
  int status = 0;
  waitpid(child, &status, 0);
  // Reaped: gone.
  EXPECT_EQ(ErrorOf(child), "process " + std::to_string(child) + ": no such process");
  EXPECT_EQ(ErrorOf(0), "process 0: not a process id");
  EXPECT_EQ(ErrorOf(getpid()), "process " + std::to_string(getpid()) + ": is this process (a process cannot stop itself)");
}

}  // namespace
}  // namespace libdump::procimage
