// The threads profile: every thread's stack at one instant, in Go's three
// forms.
#include "samplers/threads/thread_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libdump/profiler.h"
#include "samplers/testing/profile_testutil.h"

namespace libdump {
namespace {

using samplers::testing::Decode;
using samplers::testing::TempFile;

std::mutex g_mu;
std::condition_variable g_cv;
bool g_go = false;
std::atomic<int> g_waiting{0};

__attribute__((noinline)) void ThreadsWaitHere() {
  std::unique_lock<std::mutex> l(g_mu);
  ++g_waiting;
  g_cv.wait(l, [] { return g_go; });
}

// Three threads parked in ThreadsWaitHere while each form is written.
class ThreadProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    g_go = false;
    g_waiting = 0;
    for (int i = 0; i < 3; ++i) threads_.emplace_back(ThreadsWaitHere);
    while (g_waiting < 3) usleep(1000);
    usleep(20000);  // into the futex wait
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> l(g_mu);
      g_go = true;
    }
    g_cv.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  std::vector<std::thread> threads_;
};

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST_F(ThreadProfile, PprofCountsThreadsByStack) {
  TempFile f;
  ASSERT_TRUE(WriteThreadProfile(f.fd(), 0));
  const auto p = Decode(f.Contents());
  EXPECT_EQ(p.sample_types, (std::vector<std::string>{"goroutine"}));
  EXPECT_EQ(p.Total("goroutine", "ThreadsWaitHere"), 3);
  EXPECT_GE(p.Total("goroutine"), 4);  // and the one writing
}

TEST_F(ThreadProfile, TextFormsNameEveryThread) {
  TempFile one, two;
  ASSERT_TRUE(WriteThreadProfile(one.fd(), 1));
  ASSERT_TRUE(WriteThreadProfile(two.fd(), 2));
  const std::string t1 = one.Contents(), t2 = two.Contents();
  EXPECT_EQ(t1.rfind("threads profile: total ", 0), 0u) << t1;
  EXPECT_NE(t1.find("\n3 @ 0x"), std::string::npos) << t1;  // the three identical stacks
  EXPECT_EQ(Count(t1, "ThreadsWaitHere"), 1u) << t1;
  EXPECT_EQ(Count(t2, "ThreadsWaitHere"), 3u) << t2;
  EXPECT_EQ(Count(t2, "[sleeping, futex]: "), 3u) << t2;
  EXPECT_EQ(Count(t2, "[running, running]: "), 1u) << t2;  // the writer
}

}  // namespace
}  // namespace libdump
