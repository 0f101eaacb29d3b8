#include "stop_the_world.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "memory_map.h"

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

}  // namespace
}  // namespace libdump::capture
