// The mutex profile through the pthread interposition: the delay of a
// contended lock is charged to the stack that released it, one in
// `fraction` contentions is sampled, and values are scaled back by it.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "libdump/profiler.h"
#include "samplers/testing/profile_testutil.h"
#include "samplers/interpose/wait_state.h"

namespace libdump {
namespace {

using samplers::testing::Decode;
using samplers::testing::DecodedProfile;
using samplers::testing::TempFile;

DecodedProfile ReadMutexProfile() {
  TempFile f;
  EXPECT_TRUE(WriteMutexProfile(f.fd()));
  return Decode(f.Contents());
}

int64_t NowNs() { return samplers::WaitClockNs(); }

void SleepNs(int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

class MutexProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    samplers::SetWaitSamplingSeed(777);
    ResetMutexProfile();
  }
  void TearDown() override { SetMutexProfileFraction(0); }
};

std::mutex g_mu;
std::atomic<int> g_holding{0};
int64_t g_wait_ns[2];

// Holds the lock for `ns` once `waiters` threads have started waiting, and
// releases it here: this frame is the one to charge.
__attribute__((noinline)) void HoldTheLock(int64_t ns) {
  g_mu.lock();
  g_holding = 1;
  SleepNs(ns);
  g_mu.unlock();
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void WaitForTheLock(int i) {
  while (g_holding == 0) SleepNs(100000);
  const int64_t t0 = NowNs();
  g_mu.lock();
  g_wait_ns[i] = NowNs() - t0;
  g_mu.unlock();
  asm volatile("" ::: "memory");
}

// Two threads wait ~200 ms on a lock HoldTheLock holds: with every
// contention sampled, HoldTheLock is charged both waits up to its release
// (the waiters' own measures, less the hand-over after it: 5 %), and the
// waiters' stacks are charged only for what one caused the other after
// taking the lock, which is short.
TEST_F(MutexProfile, TheHolderIsChargedForTheWaitsItCaused) {
  EXPECT_EQ(SetMutexProfileFraction(1), 0);
  g_holding = 0;
  std::thread holder(HoldTheLock, 200000000);
  std::thread w0(WaitForTheLock, 0), w1(WaitForTheLock, 1);
  holder.join();
  w0.join();
  w1.join();
  EXPECT_EQ(SetMutexProfileFraction(0), 1);
  const DecodedProfile p = ReadMutexProfile();
  EXPECT_EQ(p.sample_types, (std::vector<std::string>{"contentions", "delay"}));
  EXPECT_EQ(p.period, 1);
  const double holder_ns = static_cast<double>(p.Total("delay", "HoldTheLock"));
  const double waits = static_cast<double>(g_wait_ns[0] + g_wait_ns[1]);
  EXPECT_NEAR(holder_ns, waits, 0.05 * waits);
  EXPECT_LT(static_cast<double>(p.Total("delay", "WaitForTheLock")), 0.05 * waits);
  // Each contention counts once, on the release that ended it: the
  // holder's, and for the second waiter the first waiter's.
  EXPECT_EQ(p.Total("contentions"), 2);
  EXPECT_GE(p.Total("contentions", "HoldTheLock"), 1);
}

std::atomic<int> g_turn{0};

// Exactly n contentions: each round the holder takes the lock, lets the
// waiter try, waits until the waiter is blocked in it and holds it 200 us
// more. (Without the wait a waiter scheduled late on a loaded machine found
// the lock free: fewer contentions than rounds.)
__attribute__((noinline)) void ContendedRounds(int n, bool holder) {
  for (int i = 0; i < n; ++i) {
    if (holder) {
      while (g_turn.load() != 2 * i) {
      }
      g_mu.lock();
      g_turn.store(2 * i + 1);
      // glibc marks a mutex with a blocked waiter 2 (bits/struct_mutex.h).
      while (__atomic_load_n(&g_mu.native_handle()->__data.__lock, __ATOMIC_RELAXED) != 2) sched_yield();
      SleepNs(200000);
      g_mu.unlock();
    } else {
      while (g_turn.load() != 2 * i + 1) {
      }
      g_mu.lock();
      g_mu.unlock();
      g_turn.store(2 * i + 2);
    }
  }
}

// Fraction 2: about half the 400 contentions are sampled (binomial, sd 10),
// and the profile scales them back by 2: 400 within 5 sd (100).
TEST_F(MutexProfile, OneInFractionIsSampledAndScaledBack) {
  SetMutexProfileFraction(2);
  g_turn = 0;
  const int n = 400;
  std::thread h(ContendedRounds, n, true), w(ContendedRounds, n, false);
  h.join();
  w.join();
  const DecodedProfile p = ReadMutexProfile();
  SetMutexProfileFraction(0);
  EXPECT_EQ(p.period, 2);
  const int64_t c = p.Total("contentions");
  EXPECT_EQ(c % 2, 0);
  EXPECT_NEAR(static_cast<double>(c), n, 100);
  // Each waited ~200 us; the estimate of the total is loose (the split of
  // each wait between the clocks of holder and waiter varies): within half.
  EXPECT_GT(p.Total("delay", "ContendedRounds"), n * 100000 / 2);
}

TEST_F(MutexProfile, OffRecordsNothing) {
  SetMutexProfileFraction(0);
  g_holding = 0;
  std::thread holder(HoldTheLock, 20000000);
  std::thread w0(WaitForTheLock, 0);
  holder.join();
  w0.join();
  EXPECT_EQ(ReadMutexProfile().samples.size(), 0u);
  EXPECT_EQ(SetMutexProfileFraction(-1), 0);
}

}  // namespace
}  // namespace libdump
