// The block profile through the pthread interposition (linked whole into
// this test): which waits it sees, whom it charges, and Go's bias
// correction, with tolerances from the sampling's variance.
#include <gtest/gtest.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "samplers/contention/block_profiler.h"
#include "libdump/profiler.h"
#include "samplers/testing/profile_testutil.h"
#include "samplers/interpose/wait_state.h"

namespace libdump {
namespace {

using samplers::testing::Decode;
using samplers::testing::DecodedProfile;
using samplers::testing::TempFile;

DecodedProfile ReadBlockProfile() {
  TempFile f;
  EXPECT_TRUE(WriteBlockProfile(f.fd()));
  return Decode(f.Contents());
}

int64_t NowNs() { return samplers::WaitClockNs(); }

void SleepNs(int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

class BlockProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    samplers::SetWaitSamplingSeed(12345);
    ResetBlockProfile();
  }
  void TearDown() override { SetBlockProfileRate(0); }
};

// The rule itself: always above the rate; below it, sampled with
// probability d/rate and counted rate/d times with delay rate.
TEST(BlockSampling, GoBiasCorrection) {
  const auto s = samplers::SampleBlockEvent(50, 10, 7);
  EXPECT_TRUE(s.sampled);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.delay_ns, 50);
  EXPECT_TRUE(samplers::SampleBlockEvent(3, 10, 12).sampled);   // 12 % 10 = 2 < 3
  EXPECT_FALSE(samplers::SampleBlockEvent(3, 10, 13).sampled);  // 3 >= 3
  const auto t = samplers::SampleBlockEvent(4, 10, 0);
  EXPECT_DOUBLE_EQ(t.count, 2.5);
  EXPECT_EQ(t.delay_ns, 10);
  EXPECT_FALSE(samplers::SampleBlockEvent(1000, 0, 0).sampled);  // off
}

// Many events below the rate: the estimate's variance is
// sum d_i (rate - d_i) (each contributes rate with probability d_i/rate),
// so it must land within 5 of its standard deviations of the true total.
TEST(BlockSampling, ShortEventsSumToTheTrueTotal) {
  uint64_t x = 88172645463325252ULL;
  const int64_t rate = 10000;
  double truth = 0, est = 0, count = 0, var = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int64_t d = 100 + static_cast<int64_t>(x % 5000);  // 0.1-5 us at a 10 us rate
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const auto s = samplers::SampleBlockEvent(d, rate, x);
    truth += static_cast<double>(d);
    var += static_cast<double>(d) * static_cast<double>(rate - d);
    if (s.sampled) {
      est += s.delay_ns;
      count += s.count;
    }
  }
  EXPECT_NEAR(est, truth, 5 * std::sqrt(var)) << "relative sd " << std::sqrt(var) / truth;
  EXPECT_GT(count, 0.9 * n);  // the count estimate is unbiased too; loose
  EXPECT_LT(count, 1.1 * n);
}

std::mutex g_mu;
sem_t g_sem;

int64_t g_long_ns, g_short_ns;  // each wait as the waiter measured it

__attribute__((noinline)) void BlockedOnMutexLong() {
  const int64_t t0 = NowNs();
  g_mu.lock();
  g_long_ns = NowNs() - t0;
  g_mu.unlock();
}

__attribute__((noinline)) void BlockedOnSemaphoreShort() {
  const int64_t t0 = NowNs();
  sem_wait(&g_sem);
  g_short_ns = NowNs() - t0;
}

// Two threads blocked ~300 ms and ~100 ms in known functions, at a rate far
// below both (every event kept, counted once, so no sampling error): each
// comes out as the waiter measured it around the call, to within 2 % (the
// interposer's clock reads sit inside the waiter's), and so in the measured
// ratio, about 3:1 (a loaded machine stretches the sleeps that set it).
TEST_F(BlockProfile, TwoWaitsInKnownFunctionsComeOutThreeToOne) {
  SetBlockProfileRate(10000);  // 10 us, Go's usual setting
  sem_init(&g_sem, 0, 0);
  g_mu.lock();
  std::thread a(BlockedOnMutexLong);
  std::thread b(BlockedOnSemaphoreShort);
  SleepNs(100000000);
  sem_post(&g_sem);
  SleepNs(200000000);
  g_mu.unlock();
  a.join();
  b.join();
  SetBlockProfileRate(0);
  const DecodedProfile p = ReadBlockProfile();
  EXPECT_EQ(p.sample_types, (std::vector<std::string>{"contentions", "delay"}));
  EXPECT_EQ(p.period_type, "contentions");
  const double long_ns = static_cast<double>(p.Total("delay", "BlockedOnMutexLong"));
  const double short_ns = static_cast<double>(p.Total("delay", "BlockedOnSemaphoreShort"));
  EXPECT_EQ(p.Total("contentions", "BlockedOnMutexLong"), 1);
  EXPECT_EQ(p.Total("contentions", "BlockedOnSemaphoreShort"), 1);
  const double long_truth = static_cast<double>(g_long_ns), short_truth = static_cast<double>(g_short_ns);
  EXPECT_NEAR(long_ns, long_truth, 0.02 * long_truth);
  EXPECT_NEAR(short_ns, short_truth, 0.02 * short_truth);
  EXPECT_NEAR(long_ns / short_ns, long_truth / short_truth, 0.05 * long_truth / short_truth);
  EXPECT_NEAR(long_ns / short_ns, 3.0, 1.0);
  // The profiler's own frames are cut: the leaf is the interposed call or
  // the waiting function itself.
  for (const auto& s : p.samples) {
    ASSERT_FALSE(s.functions.empty());
    EXPECT_EQ(s.functions[0].find("libdump::samplers"), std::string::npos) << s.functions[0];
  }
}

// Waits far below the rate, through the interposition: each is sampled
// with probability d/rate, and the profile's delay estimates the total the
// test measured itself, within 5 standard deviations of the estimate
// (variance sum d_i (rate - d_i)) plus 10 % for what the two clocks see
// differently (the test's reads bracket the interposer's).
__attribute__((noinline)) void ManyShortWaits(int n, std::vector<int64_t>* durations) {
  for (int i = 0; i < n; ++i) {
    const int64_t t0 = NowNs();
    sem_wait(&g_sem);
    durations->push_back(NowNs() - t0);
  }
}

TEST_F(BlockProfile, ShortWaitsBelowTheRateSumToTheTrueTotal) {
  const int64_t rate = 1000000;  // 1 ms; the waits are ~50-150 us
  SetBlockProfileRate(rate);
  sem_init(&g_sem, 0, 0);
  const int n = 3000;
  std::vector<int64_t> durations;
  durations.reserve(n);
  std::thread waiter(ManyShortWaits, n, &durations);
  for (int i = 0; i < n; ++i) {
    SleepNs(50000);
    sem_post(&g_sem);
  }
  waiter.join();
  SetBlockProfileRate(0);
  double truth = 0, var = 0;
  for (int64_t d : durations) {
    truth += static_cast<double>(d);
    if (d < rate) var += static_cast<double>(d) * static_cast<double>(rate - d);
  }
  const DecodedProfile p = ReadBlockProfile();
  const double est = static_cast<double>(p.Total("delay", "ManyShortWaits"));
  EXPECT_NEAR(est, truth, 5 * std::sqrt(var) + 0.1 * truth)
      << "truth " << truth << " sd " << std::sqrt(var) << " events " << p.Total("contentions", "ManyShortWaits");
  EXPECT_NEAR(static_cast<double>(p.Total("contentions", "ManyShortWaits")), n, 0.5 * n);
}

std::atomic<int> g_started{0};  // threads about to wait

__attribute__((noinline)) void WaitOnConditionVariable(std::condition_variable* cv, std::mutex* m, bool* ready) {
  std::unique_lock<std::mutex> l(*m);
  ++g_started;
  cv->wait(l, [&] { return *ready; });
}

__attribute__((noinline)) void WaitOnConditionVariableFor(std::condition_variable* cv, std::mutex* m, bool* ready) {
  std::unique_lock<std::mutex> l(*m);
  ++g_started;
  cv->wait_for(l, std::chrono::seconds(10), [&] { return *ready; });
}

__attribute__((noinline)) void ReadLockShared(std::shared_mutex* m) {
  ++g_started;
  std::shared_lock<std::shared_mutex> l(*m);
}

// The asm keeps each call from becoming a tail call, which would take the
// function's frame off the stack.
__attribute__((noinline)) void JoinThread(std::thread* t) {
  ++g_started;
  t->join();
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void WaitAtBarrier(pthread_barrier_t* b) {
  ++g_started;
  pthread_barrier_wait(b);
  asm volatile("" ::: "memory");
}

// Every kind of wait the C++ library builds on is seen, at rate 1. Each
// thread says when it is about to wait; the main thread releases them 20 ms
// after the last says so (a thread preempted in between waits less: 1 ms
// is required of each).
TEST_F(BlockProfile, SeesConditionVariablesSharedMutexesJoinsAndBarriers) {
  SetBlockProfileRate(1);
  g_started = 0;
  std::condition_variable cv;
  std::mutex m;
  bool ready = false;
  std::shared_mutex sm;
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, nullptr, 2);
  sm.lock();
  std::thread c1(WaitOnConditionVariable, &cv, &m, &ready);
  std::thread c2(WaitOnConditionVariableFor, &cv, &m, &ready);
  std::thread r(ReadLockShared, &sm);
  std::thread sleeper([] {
    while (g_started < 5) SleepNs(1000000);
    SleepNs(20000000);
  });
  std::thread joiner(JoinThread, &sleeper);
  std::thread at_barrier(WaitAtBarrier, &barrier);
  while (g_started < 5) SleepNs(1000000);
  SleepNs(20000000);
  {
    std::lock_guard<std::mutex> l(m);
    ready = true;
  }
  cv.notify_all();
  sm.unlock();
  SleepNs(20000000);
  pthread_barrier_wait(&barrier);
  for (std::thread* t : {&c1, &c2, &r, &joiner, &at_barrier}) t->join();
  SetBlockProfileRate(0);
  const DecodedProfile p = ReadBlockProfile();
  for (const char* f : {"WaitOnConditionVariable", "WaitOnConditionVariableFor", "ReadLockShared", "WaitAtBarrier"}) {
    EXPECT_GE(p.Total("contentions", f), 1) << f;
    EXPECT_GE(p.Total("delay", f), 1000000) << f;
  }
  // libstdc++'s std::thread::join keeps no frame pointer, so the walk from
  // pthread_join skips its caller, JoinThread: the join is found by the
  // library frame, less the main thread's own (short) joins.
  EXPECT_GE(p.Total("delay", "std::thread::join") - p.Total("delay", "TestBody"), 1000000);
  if (::testing::Test::HasFailure()) {
    for (const auto& s : p.samples) {
      std::string st;
      for (const auto& fn : s.functions) st += fn + " <- ";
      ADD_FAILURE() << s.values[0] << " " << s.values[1] << ": " << st;
    }
  }
}

// Off: nothing recorded; an uncontended lock is not an event even when on.
TEST_F(BlockProfile, OffRecordsNothingAndUncontendedLocksAreNotEvents) {
  SetBlockProfileRate(0);
  std::mutex m;
  for (int i = 0; i < 1000; ++i) {
    m.lock();
    m.unlock();
  }
  SetBlockProfileRate(1);
  for (int i = 0; i < 1000; ++i) {
    m.lock();
    m.unlock();
  }
  SetBlockProfileRate(0);
  EXPECT_EQ(ReadBlockProfile().samples.size(), 0u);
  EXPECT_TRUE(WaitsInterposed());
}

}  // namespace
}  // namespace libdump
