#include "platform/proc/thread_list.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace libdump::proc {
namespace {

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

TEST(ListThreads, SeesEveryThreadSortedAndCountsBeyondMax) {
  constexpr int kThreads = 6;
  std::atomic<int> started{0};
  std::atomic<bool> stop{false};
  std::vector<pid_t> tids(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      tids[i] = Gettid();
      started.fetch_add(1);
      while (!stop.load()) std::this_thread::yield();
    });
  }
  while (started.load() < kThreads) std::this_thread::yield();

  pid_t out[64];
  const long n = ListThreads(out, 64);
  ASSERT_GE(n, kThreads + 1);
  ASSERT_LE(n, 64);
  EXPECT_TRUE(std::is_sorted(out, out + n));
  EXPECT_NE(std::find(out, out + n, getpid()), out + n);
  for (pid_t t : tids) EXPECT_NE(std::find(out, out + n, t), out + n) << t;

  // Room for two: the count is still all of them, and what fits is sorted.
  pid_t two[2] = {0, 0};
  EXPECT_EQ(ListThreads(two, 2), n);
  EXPECT_LT(two[0], two[1]);

  stop.store(true);
  for (auto& t : threads) t.join();
  // A joined thread's entry may outlive the join by a moment: wait (bounded).
  pid_t after[64];
  long left = ListThreads(after, 64);
  for (int i = 0; i < 2000 && left != n - kThreads; ++i) {
    usleep(1000);
    left = ListThreads(after, 64);
  }
  EXPECT_EQ(left, n - kThreads);
}

TEST(ReadThreadStat, NamesThisThread) {
  pthread_setname_np(pthread_self(), "proc-test-name");
  char name[16];
  char state = 0;
  ASSERT_TRUE(ReadThreadStat(Gettid(), name, sizeof name, &state));
  EXPECT_STREQ(name, "proc-test-name");
  EXPECT_EQ(state, 'R');
  EXPECT_FALSE(ReadThreadStat(0, name, sizeof name, &state));
}

}  // namespace
}  // namespace libdump::proc
