// CPU profiler accuracy. Theory: a thread's timer fires once per period of
// the CPU time that thread uses, and the first expiry is uniform in
// (0, period]; a thread that uses c ns therefore gets floor(c/T) or
// floor(c/T)+1 samples, c/T in expectation, whatever else runs. The counts
// are nearly deterministic: tolerances below are one or two samples of
// quantisation plus the process's own helper threads (which are profiled too).
// Not TSan-labelled: TSan defers asynchronous signals until the receiving
// thread enters an intercepted call, which a spinning thread never does.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "libdump/profiler.h"
#include "samplers/testing/profile_testutil.h"

namespace libdump {
namespace {

using samplers::testing::Decode;
using samplers::testing::DecodedProfile;
using samplers::testing::TempFile;

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t ProcessCpuNs() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1000000000 +
         (int64_t{u.ru_utime.tv_usec} + u.ru_stime.tv_usec) * 1000;
}

// Burns CPU for ns of this thread's CPU time, wherever the scheduler puts it.
// Distinct multipliers (and noipa) keep GCC's identical code folding from
// merging the burners into one symbol.
#define DEFINE_BURNER(Name, K)                                           \
  __attribute__((noipa)) uint64_t Name(int64_t ns) {                     \
    const int64_t end = ThreadCpuNs() + ns;                              \
    volatile uint64_t x = 1;                                             \
    while (ThreadCpuNs() < end) {                                        \
      for (int i = 0; i < 200000; ++i) x = x * (K) + 1;       \
    }                                                                    \
    return x;                                                            \
  }
DEFINE_BURNER(SpinAlpha, 6364136223846793005ULL)
DEFINE_BURNER(SpinBeta, 6364136223846793007ULL)
DEFINE_BURNER(SerialBurn, 6364136223846793009ULL)
DEFINE_BURNER(ShortLivedBurn, 6364136223846793011ULL)
DEFINE_BURNER(PreexistingBurn, 6364136223846793013ULL)

// Not tail calls (the +1), so these frames stay on the stack under the
// spinners. Samples are counted by them: a sample taken inside the
// clock_gettime syscall stub (no frame pointer) skips the spinner's own frame.
__attribute__((noipa)) uint64_t CallerOfAlpha(int64_t ns) { return SpinAlpha(ns) + 1; }
__attribute__((noipa)) uint64_t CallerOfBeta(int64_t ns) { return SpinBeta(ns) + 1; }

DecodedProfile Profile(const TempFile& f) { return Decode(f.Contents()); }

TEST(CPUProfiler, TwoThreadsInDifferentFunctionsSplitEvenly) {
  SetCPUProfileRate(100);
  TempFile f;
  const int64_t cpu0 = ProcessCpuNs();
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  std::thread a([] { CallerOfAlpha(600000000); });
  std::thread b([] { CallerOfBeta(600000000); });
  a.join();
  b.join();
  const int64_t cpu = ProcessCpuNs() - cpu0;
  ASSERT_TRUE(StopCPUProfile());
  const DecodedProfile p = Profile(f);
  ASSERT_EQ(p.sample_types, (std::vector<std::string>{"samples", "cpu"}));
  EXPECT_EQ(p.period, 10000000);
  const int64_t alpha = p.Total("samples", "CallerOfAlpha"), beta = p.Total("samples", "CallerOfBeta");
  // 60 samples each, +-1 of quantisation: the split is 50/50 within 5%.
  EXPECT_NEAR(static_cast<double>(alpha) / static_cast<double>(alpha + beta), 0.5, 0.05) << alpha << " vs " << beta;
  EXPECT_NEAR(alpha, 60, 3);
  EXPECT_NEAR(beta, 60, 3);
  // Every sample against the kernel's account of the process's CPU.
  const double expected = static_cast<double>(cpu) / 1e9 * 100;
  EXPECT_NEAR(static_cast<double>(p.Total("samples")), expected, 0.05 * expected);
  EXPECT_EQ(p.Total("cpu"), p.Total("samples") * 10000000);
  // The frame-pointer walk reaches past the leaf into its callers.
  bool caller_seen = false;
  for (const auto& s : p.samples) caller_seen |= s.Contains("SpinAlpha") && s.Contains("CallerOfAlpha");
  EXPECT_TRUE(caller_seen);
  for (const auto& s : p.samples) {
    if (!caller_seen && s.Contains("SpinAlpha")) {
      for (const auto& fn : s.functions) ADD_FAILURE() << "frame: " << fn;
    }
  }
  EXPECT_EQ(GetCPUProfileStats().dropped, 0u);
}

TEST(CPUProfiler, SerialHundredMillisecondBurnGetsTenSamples) {
  SetCPUProfileRate(100);
  TempFile f;
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  SerialBurn(100000000);
  ASSERT_TRUE(StopCPUProfile());
  EXPECT_NEAR(Profile(f).Total("samples", "SerialBurn"), 10, 2);
}

TEST(CPUProfiler, ShortLivedThreadsAreSampled) {
  // 80 threads of 25 ms each: 2.5 expirations each in expectation. The
  // kernel checks CPU timers at its ticks (CONFIG_HZ=250 on Debian: every
  // 4 ms of the thread's CPU), so an expiry in a thread's last 4 ms is lost
  // when the thread exits before the next tick: with the expiry uniform in
  // the tick, 0.1/ms x 4 ms x 1/2 = 0.2 per thread, 184 in all. Variance per
  // thread at most 1/4 (floor or ceil) + 0.2 x 0.8 (the loss), so sigma <=
  // sqrt(80 x 0.41) ~ 5.7; 4 sigma is 23. A profiler that only found threads
  // by scanning /proc every 100 ms would see almost none of them, and one
  // that gave each thread a full first period exactly 160 (expiries at 10
  // and 20 ms, never lost).
  SetCPUProfileRate(100);
  TempFile f;
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  for (int i = 0; i < 80; ++i) std::thread([] { ShortLivedBurn(25000000); }).join();
  ASSERT_TRUE(StopCPUProfile());
  EXPECT_NEAR(Profile(f).Total("samples", "ShortLivedBurn"), 184, 23);
}

TEST(CPUProfiler, ThreadsThatExistedBeforeStartAreSampled) {
  std::atomic<int> phase{0};
  std::thread t([&] {
    while (phase.load() == 0) std::this_thread::yield();
    PreexistingBurn(200000000);
    phase = 2;
  });
  SetCPUProfileRate(100);
  TempFile f;
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  phase = 1;
  t.join();
  ASSERT_TRUE(StopCPUProfile());
  EXPECT_NEAR(Profile(f).Total("samples", "PreexistingBurn"), 20, 2);
}

TEST(CPUProfiler, RateAndRestart) {
  SetCPUProfileRate(250);
  EXPECT_EQ(CPUProfileRate(), 250);
  TempFile f;
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  TempFile g;
  EXPECT_FALSE(StartCPUProfile(g.fd()));  // one profile at a time
  SerialBurn(100000000);
  ASSERT_TRUE(StopCPUProfile());
  const DecodedProfile p = Profile(f);
  EXPECT_EQ(p.period, 4000000);
  EXPECT_NEAR(p.Total("samples", "SerialBurn"), 25, 2);
  SetCPUProfileRate(100);
}

// The worker drains every 100 ms, and sooner when the handlers have pushed
// half a ring (4096 samples) since it was last told: a burst of 12,500
// samples in ~90 ms, three times what the ring holds, loses none. Without
// the handlers' wake-up two thirds of them would be dropped.
TEST(CPUProfiler, ABurstLargerThanTheRingLosesNothing) {
  TempFile f;
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  const CPUProfileStats before = GetCPUProfileStats();
  for (int burst = 0; burst < 5; ++burst) {
    for (int i = 0; i < 2500; ++i) raise(SIGPROF);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const CPUProfileStats after = GetCPUProfileStats();
  ASSERT_TRUE(StopCPUProfile());
  EXPECT_GE(after.samples - before.samples, 12500u);
  EXPECT_EQ(after.dropped, before.dropped);
}

// A forked child has the parent's session but not its worker thread or its
// timers, and the profile's file is the parent's. A stop in the child (the
// preload's at-exit handler makes one in every child that exits normally)
// returns at once and writes nothing; without the fork handlers it waited
// forever for the worker.
TEST(CPUProfiler, ForkedChildStopsAtOnceAndLeavesTheParentsProfile) {
  TempFile f;
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a hang ends the child with SIGALRM, failing the test
    const bool ok = StopCPUProfile();
    _exit(ok && lseek(f.fd(), 0, SEEK_END) == 0 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  // The parent's profile goes on. Not at its exact rate: on this kernel
  // (6.18 under a hypervisor, loaded) a thread's CPU timer can stay silent
  // for up to ~90 ms of the thread's CPU after a fork, with or without a
  // profiler (a bare timer_create/fork program misses as many): 200 ms of
  // CPU, 20 expirations at 100 Hz, of which at least 5 arrive.
  const CPUProfileStats before = GetCPUProfileStats();
  SerialBurn(200000000);
  const CPUProfileStats after = GetCPUProfileStats();
  ASSERT_TRUE(StopCPUProfile());
  const int64_t burnt = Profile(f).Total("samples", "SerialBurn");
  EXPECT_GE(burnt, 5) << "all samples " << Profile(f).Total("samples") << ", taken while burning "
                      << after.samples - before.samples << ", dropped " << after.dropped - before.dropped;
  EXPECT_LE(burnt, 22);
}

}  // namespace
}  // namespace libdump
