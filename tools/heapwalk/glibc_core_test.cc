// The walker over a gcore of a running program (testing/heap_target.cc) read
// by CoreImage: the program's own report of its blocks and mallinfo2 must be
// what the walk finds in the core, and the program keeps running.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core_image.h"
#include "glibc_walker.h"
#include "testing/heap_report.h"

namespace libdump::heapwalk {
namespace {

// The target as a child: its report on a pipe, stdin kept open until the end.
// With a core_dir it runs there, allowed to dump core.
class Target {
 public:
  explicit Target(const char* core_dir = nullptr) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      if (core_dir != nullptr) {
        rlimit core{};
        getrlimit(RLIMIT_CORE, &core);
        core.rlim_cur = core.rlim_max;
        if (chdir(core_dir) != 0 || setrlimit(RLIMIT_CORE, &core) != 0) _exit(126);
      }
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      execl(HEAP_TARGET, HEAP_TARGET, static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    FILE* from = fdopen(out[0], "r");
    char buf[512];
    while (std::fgets(buf, sizeof buf, from) != nullptr && std::string(buf) != "ready\n") report += buf;
    std::fclose(from);
  }
  ~Target() { Stop(); }
  int pid() const { return pid_; }
  // Aborts the target and reaps it: true when the kernel dumped its core.
  bool Abort() {
    kill(pid_, SIGABRT);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    close(to_);
    return WIFSIGNALED(status) && WCOREDUMP(status);
  }
  // Closes stdin and waits: true when the target exited by itself, 0.
  bool Stop() {
    if (pid_ <= 0) return false;
    close(to_);
    int status = 0;
    // A target left stopped would never exit: killed after 10 s, and the
    // test fails.
    for (int i = 0; i < 1000 && waitpid(pid_, &status, WNOHANG) != pid_; ++i) {
      if (i == 999) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
      usleep(10000);
    }
    pid_ = 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::string report;

 private:
  int pid_ = 0, to_ = -1;
};

TEST(GlibcCoreTest, GcoreOfAProgramOnGlibc) {
  if (system("command -v gcore > /dev/null 2>&1") != 0) GTEST_SKIP() << "gcore not installed (gdb)";
  Target target;
  ASSERT_GT(target.pid(), 0);
  const testing::HeapReport r = testing::HeapReport::Parse(target.report);
  ASSERT_EQ(r.threads, 5u) << target.report.substr(0, 200);
  char dir[] = "/tmp/heapwalk_core_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string core = std::string(dir) + "/core";
  const std::string cmd = "gcore -o " + core + " " + std::to_string(target.pid()) + " > /dev/null 2>&1";
  ASSERT_EQ(system(cmd.c_str()), 0) << cmd;
  const std::string file = core + "." + std::to_string(target.pid());
  auto image = procimage::CoreImage::Open(file);
  const GlibcHeap heap = GlibcWalker().Inspect(*image);
  const GlibcHeap by_structure = GlibcWalker({.use_symbols = false}).Inspect(*image);
  unlink(file.c_str());
  rmdir(dir);
  EXPECT_TRUE(target.Stop()) << "the target did not run on after the core";
  for (const GlibcHeap* h : {&heap, &by_structure}) {
    for (const auto& d : h->walk.damage) ADD_FAILURE() << std::hex << d.addr << ": " << d.what;
    testing::ExpectKnownBlocks(*h, r);
    testing::ExpectMallinfo(*h, r.info);
    EXPECT_EQ(testing::Stat(h->walk, "tcaches_by_thread_pointer"), 5u);
    testing::PrintFigures(*h, r);
  }
  EXPECT_NE(by_structure.walk.found_by.find("by structure"), std::string::npos);
  EXPECT_EQ(heap.main_arena, by_structure.main_arena);
  EXPECT_EQ(heap.walk.blocks.size(), by_structure.walk.blocks.size());
}

// The kernel's own core (default coredump_filter: anonymous private
// memory, and libc's written data pages), of the program aborted.
TEST(GlibcCoreTest, KernelCoreOfAnAbortedProgram) {
  std::ifstream pattern_file("/proc/sys/kernel/core_pattern"), pid_file("/proc/sys/kernel/core_uses_pid");
  std::string pattern, uses_pid;
  std::getline(pattern_file, pattern);
  std::getline(pid_file, uses_pid);
  if (pattern != "core") GTEST_SKIP() << "core_pattern is '" << pattern << "', not a file in the working directory";
  rlimit core{};
  if (getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_max < (256u << 20))
    GTEST_SKIP() << "cores are limited to " << core.rlim_max << " bytes";
  char dir[] = "/tmp/heapwalk_kcore_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  Target target(dir);
  ASSERT_GT(target.pid(), 0);
  const testing::HeapReport r = testing::HeapReport::Parse(target.report);
  ASSERT_EQ(r.threads, 5u);
  const int pid = target.pid();
  ASSERT_TRUE(target.Abort()) << "no core dumped";
  const std::string file = std::string(dir) + "/core" + (uses_pid == "1" ? "." + std::to_string(pid) : "");
  auto image = procimage::CoreImage::Open(file);
  const GlibcHeap heap = GlibcWalker({.use_symbols = false}).Inspect(*image);
  unlink(file.c_str());
  rmdir(dir);
  for (const auto& d : heap.walk.damage) ADD_FAILURE() << std::hex << d.addr << ": " << d.what;
  testing::ExpectKnownBlocks(heap, r);
  testing::ExpectMallinfo(heap, r.info);
  EXPECT_EQ(testing::Stat(heap.walk, "tcaches_by_thread_pointer"), 5u);
  testing::PrintFigures(heap, r);
}

}  // namespace
}  // namespace libdump::heapwalk
