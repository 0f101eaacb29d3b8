#include "platform/capture/stop_the_world.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "platform/capture/memory_map.h"

namespace libdump::capture {
namespace {

using namespace std::chrono_literals;

struct Spinners {
  explicit Spinners(int n) : counters(n) {
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([this, i] {
        while (!quit.load(std::memory_order_relaxed)) counters[i].fetch_add(1, std::memory_order_relaxed);
      });
    }
    for (auto& c : counters) while (c.load() == 0) std::this_thread::yield();
  }
  ~Spinners() {
    quit = true;
    for (auto& t : threads) t.join();
  }
  std::vector<uint64_t> Snapshot() {
    std::vector<uint64_t> v;
    for (auto& c : counters) v.push_back(c.load(std::memory_order_relaxed));
    return v;
  }
  std::vector<std::atomic<uint64_t>> counters;
  std::vector<std::thread> threads;
  std::atomic<bool> quit{false};
};

size_t CountState(WorldStop& w, StopState s) {
  size_t n = 0;
  for (size_t i = 0; i < w.count(); ++i) n += w.slot(i).state.load() == static_cast<int>(s);
  return n;
}

TEST(StopTheWorld, StopsEveryThreadAndResumesThem) {
  Spinners spin(3);
  std::vector<ThreadSlot> slots(64);
  for (int round = 0; round < 20; ++round) {
    WorldStop w(slots.data(), slots.size());
    ASSERT_TRUE(w.Stop());
    EXPECT_GE(w.count(), 3u);
    EXPECT_EQ(CountState(w, StopState::kStopped), w.count() - CountState(w, StopState::kGone));
    const auto before = spin.Snapshot();
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(spin.Snapshot(), before) << "a thread ran while the world was stopped";
    w.Resume();
    // Two cores, other work: a resumed thread may wait for a CPU, so allow time.
    const auto after = spin.Snapshot();
    for (size_t i = 0; i < after.size(); ++i) {
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      while (spin.counters[i].load() == after[i] && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
      }
      EXPECT_GT(spin.counters[i].load(), after[i]) << "thread " << i << " stayed stopped";
    }
  }
}

TEST(StopTheWorld, CapturedStackPointerIsOnAWritableStack) {
  Spinners spin(2);
  std::vector<ThreadSlot> slots(64);
  MemoryMap map;
  WorldStop w(slots.data(), slots.size());
  ASSERT_TRUE(w.Stop());
  ASSERT_TRUE(map.Read());
  for (size_t i = 0; i < w.count(); ++i) {
    const ThreadSlot& s = w.slot(i);
    if (s.state.load() != static_cast<int>(StopState::kStopped)) continue;
    const Mapping* m = map.Find(static_cast<uint64_t>(s.regs[REG_RSP]));
    ASSERT_NE(m, nullptr) << "tid " << s.tid;
    EXPECT_TRUE(m->readable && m->writable);
    EXPECT_NE(s.regs_addr, 0u);
    EXPECT_NE(s.thread_pointer, 0u);
  }
  w.Resume();
}

TEST(StopTheWorld, ThreadsStartedDuringTheStopAreStoppedToo) {
  std::atomic<bool> quit{false};
  std::atomic<uint64_t> spawned{0};
  std::thread spawner([&] {
    while (!quit) {
      std::thread([&] { spawned.fetch_add(1); }).join();
    }
  });
  std::vector<ThreadSlot> slots(256);
  for (int round = 0; round < 20; ++round) {
    WorldStop w(slots.data(), slots.size());
    ASSERT_TRUE(w.Stop());
    const uint64_t n = spawned.load();
    std::this_thread::sleep_for(2ms);
    EXPECT_EQ(spawned.load(), n);
    EXPECT_EQ(CountState(w, StopState::kUnresponsive), 0u);
    w.Resume();
  }
  quit = true;
  spawner.join();
}

TEST(StopTheWorld, ThreadBlockingTheSignalIsReportedAndLaterReleased) {
  std::atomic<bool> blocked{false}, unblock{false}, quit{false};
  std::atomic<uint64_t> ticks{0};
  std::thread t([&] {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, StopSignal());
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
    blocked = true;
    while (!unblock) std::this_thread::yield();
    pthread_sigmask(SIG_UNBLOCK, &s, nullptr);  // the stale signal arrives now
    while (!quit) ticks.fetch_add(1);
  });
  while (!blocked) std::this_thread::yield();
  std::vector<ThreadSlot> slots(64);
  {
    WorldStop w(slots.data(), slots.size());
    ASSERT_TRUE(w.Stop(100));
    EXPECT_EQ(CountState(w, StopState::kUnresponsive), 1u);
    w.Resume();
  }
  unblock = true;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (ticks.load() < 1000 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_GE(ticks.load(), 1000u) << "the late signal parked the thread for good";
  quit = true;
  t.join();
}

thread_local bool t_inside = false;

TEST(StopTheWorld, GateDefersTheStopUntilTheCriticalSectionEnds) {
  SetStopGate({[] { return t_inside; }});
  std::atomic<bool> entered{false}, left{false};
  // Every other thread is stopped too, so the section ends by itself.
  std::thread t([&] {
    t_inside = true;
    entered = true;
    const auto end = std::chrono::steady_clock::now() + 50ms;
    while (std::chrono::steady_clock::now() < end) asm volatile("" ::: "memory");
    t_inside = false;
    StopIfRequested();
    left = true;
  });
  while (!entered) std::this_thread::yield();
  std::vector<ThreadSlot> slots(64);
  WorldStop w(slots.data(), slots.size());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(w.Stop());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms) << "stopped inside the critical section";
  EXPECT_EQ(CountState(w, StopState::kUnresponsive), 0u);
  EXPECT_FALSE(left.load());
  w.Resume();
  t.join();
  EXPECT_TRUE(left.load());
  SetStopGate({});
}

// A thread that forks with a stop pending (it arrived inside a critical
// section, as one does inside the allocator's fork handlers) leaves the
// section in the child too; there no dumper exists, and the child must go on
// instead of parking forever with every signal blocked.
TEST(StopTheWorld, AChildForkedWithAStopPendingNeverParks) {
  SetStopGate({[] { return t_inside; }});
  std::atomic<bool> entered{false};
  int child_status = -1;
  bool child_hung = false;
  std::thread t([&] {
    t_inside = true;
    entered = true;
    // Long enough for the stop's signal to arrive and be deferred.
    const auto end = std::chrono::steady_clock::now() + 100ms;
    while (std::chrono::steady_clock::now() < end) asm volatile("" ::: "memory");
    const pid_t child = fork();
    if (child == 0) {
      t_inside = false;
      StopIfRequested();
      sigset_t mask;
      pthread_sigmask(SIG_SETMASK, nullptr, &mask);
      _exit(sigismember(&mask, SIGTERM) ? 3 : 0);  // the mask is the thread's own again
    }
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (waitpid(child, &child_status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        child_hung = true;
        kill(child, SIGKILL);
        waitpid(child, &child_status, 0);
        break;
      }
      std::this_thread::sleep_for(1ms);
    }
    t_inside = false;
    StopIfRequested();  // the parent parks: its dumper is here
  });
  while (!entered) std::this_thread::yield();
  std::vector<ThreadSlot> slots(64);
  WorldStop w(slots.data(), slots.size());
  ASSERT_TRUE(w.Stop(10000));
  EXPECT_EQ(CountState(w, StopState::kUnresponsive), 0u);
  w.Resume();
  t.join();
  EXPECT_FALSE(child_hung) << "the child parked for a dumper that is not in it";
  EXPECT_TRUE(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0) << child_status;
  SetStopGate({});
}

// A child forked while a stop is running (its dumper stays in the parent)
// can stop its own world: the stop is not still held.
TEST(StopTheWorld, AChildForkedDuringAStopCanStopItsOwnWorld) {
  std::vector<ThreadSlot> slots(64);
  WorldStop w(slots.data(), slots.size());
  ASSERT_TRUE(w.Stop());
  // The dumper forks here only to be the thread that holds the stop; the
  // child of any thread inherits the same state.
  const pid_t child = fork();
  if (child == 0) {
    std::vector<ThreadSlot> own(8);
    WorldStop mine(own.data(), own.size());
    std::thread helper([] { usleep(20000); });
    const bool ok = mine.Stop(2000) && mine.count() == 1 &&
                    own[0].state.load() == static_cast<int>(StopState::kStopped);
    mine.Resume();
    helper.join();
    _exit(ok ? 0 : 1);
  }
  w.Resume();
  int status = -1;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      FAIL() << "the child waited for the parent's stop";
    }
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace libdump::capture
