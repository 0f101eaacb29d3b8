#include "detach_on_signal.h"

#include <gtest/gtest.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "live_image.h"
#include "testing/target_process.h"

namespace libdump::procimage {
namespace {

using testing::TargetProcess;

// Runs tool(pid) in a child process (the tool must be a process of its own:
// it dies of the signal) and returns the child's wait status; *byte is what
// the tool wrote to report.
template <class Tool>
int RunTool(int target, Tool tool, char* byte) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const char report = tool(target);
    if (write(fds[1], &report, 1) != 1) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  *byte = 0;
  if (read(fds[0], byte, 1) != 1) *byte = 0;
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

// 'd' when the tool no longer traces thread tid.
char Traced(int tid) {
  errno = 0;
  const long r = ptrace(PTRACE_PEEKUSER, tid, nullptr, nullptr);
  return r == -1 && errno == ESRCH ? 'd' : 'a';
}

TEST(DetachOnSignal, TheHandlerLetsTheThreadsGoBeforeTheDefaultAction) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  char report = 0;
  // SIGURG's default action is to ignore it: the tool lives on to tell
  // whether the handler detached.
  const int status = RunTool(
      target.pid(),
      [](int pid) {
        auto image = LiveImage::Attach(pid);
        DetachOnSignal guard(image->StoppedThreads(), {SIGURG});
        if (Traced(pid) != 'a') return 'x';
        raise(SIGURG);
        return Traced(pid);
      },
      &report);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(report, 'd');
  EXPECT_TRUE(target.Ping());
}

TEST(DetachOnSignal, ASignalOnAnotherThreadIsPassedToTheTracer) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  char report = 0;
  RunTool(
      target.pid(),
      [](int pid) {
        auto image = LiveImage::Attach(pid);
        DetachOnSignal guard(image->StoppedThreads(), {SIGURG});
        std::thread([] { raise(SIGURG); }).join();
        // The forwarded signal has reached this thread by now (it is
        // delivered on the way back from the join's system call); give it a
        // moment on a loaded machine.
        for (int i = 0; i < 100 && Traced(pid) == 'a'; ++i) usleep(1000);
        return Traced(pid);
      },
      &report);
  EXPECT_EQ(report, 'd');
  EXPECT_TRUE(target.Ping());
}

TEST(DetachOnSignal, SigtermEndsTheToolAndTheTargetRuns) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  char report = 0;
  const int status = RunTool(
      target.pid(),
      [](int pid) {
        auto image = LiveImage::Attach(pid);
        DetachOnSignal guard(image->StoppedThreads());
        raise(SIGTERM);
        return 'l';  // not reached: the tool dies of the signal
      },
      &report);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(report, 0);
  EXPECT_TRUE(target.Ping());
}

TEST(DetachOnSignal, TheGuardGivesThePreviousHandlerBack) {
  struct sigaction before = {};
  sigaction(SIGURG, nullptr, &before);
  {
    DetachOnSignal guard({}, {SIGURG});
    struct sigaction during = {};
    sigaction(SIGURG, nullptr, &during);
    EXPECT_NE(during.sa_handler, before.sa_handler);
  }
  struct sigaction after = {};
  sigaction(SIGURG, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace libdump::procimage
