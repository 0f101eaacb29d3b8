// A program with known phases for the flight recorder's crash test: thread
// "worker-a" spends 200 ms in region "phase-a" burning CPU in PhasesBurn,
// thread "worker-b" waits 50 ms in PhasesWaitForLock for a mutex the main
// thread holds (region "lock-wait"; the pthread
// interposition linked in reports the same wait, "blocked", to the
// recorder's window with its stack), a task spans both threads, then
// the main thread crashes. The recorder is started from the environment as
// the preload would (LIBDUMP_FLIGHT_RECORDER_ON_CRASH=path).
//
//   flight_recorder_phases crash|abort|snapshot OUT_JSON OUT_PPROF
// crash: SIGSEGV at the end; abort: abort(); snapshot: WriteTo and
// WriteCPUProfileTo into the two files, then a normal exit.
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "samplers/flight_recorder/flight_recorder.h"
#include "libdump/flight_recorder.h"

namespace {

using Clock = std::chrono::steady_clock;

// Burns CPU so that the recorder's CPU samples have a known function: long
// stretches of arithmetic between clock reads, so that nearly every sample
// lands in this frame and not in a frameless clock_gettime. It runs until
// both d of wall time and d of the thread's CPU time have passed: on a
// loaded machine the thread gets its 20 Hz samples all the same.
__attribute__((noinline)) void PhasesBurn(std::chrono::milliseconds d) {
  const auto end = Clock::now() + d;
  const auto cpu_ns = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  };
  const int64_t cpu_end = cpu_ns() + std::chrono::nanoseconds(d).count();
  volatile uint64_t x = 0;
  while (Clock::now() < end || cpu_ns() < cpu_end) {
    for (int i = 0; i < 200000; ++i) x = x * 31 + static_cast<uint64_t>(i);
  }
}

// Where worker-b waits for the mutex: a known frame for the wait's stack.
__attribute__((noinline)) void PhasesWaitForLock(std::mutex& mu) {
  std::lock_guard<std::mutex> g(mu);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::mutex g_mu;
std::atomic<int64_t> g_wait_began{0};  // steady_clock ticks, 0 until b waits

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s crash|abort|snapshot OUT_JSON OUT_PPROF\n", argv[0]);
    return 2;
  }
  libdump::FlightRecorder snapshot_recorder;
  const bool snapshot = std::strcmp(argv[1], "snapshot") == 0;
  if (snapshot) {
    snapshot_recorder.SetMinAge(std::chrono::seconds(10));
    if (!snapshot_recorder.Start()) return 3;
  } else if (!libdump::samplers::flight::StartFromEnvironment()) {
    std::fprintf(stderr, "the recorder did not start from the environment\n");
    return 3;
  }
  libdump::trace::Task task("request");
  const uint64_t task_id = task.id();
  std::unique_lock<std::mutex> held(g_mu);
  // Each phase is also timed here, just outside the recorder's region, so
  // the check compares the recorded durations with what really happened.
  double a_ms = 0, b_ms = 0;
  std::thread a([task_id, &a_ms] {
    pthread_setname_np(pthread_self(), "worker-a");
    libdump::trace::Log("phase", "a begins", task_id);
    const auto t0 = Clock::now();
    {
      libdump::trace::Region r("phase-a", task_id);
      PhasesBurn(std::chrono::milliseconds(200));
    }
    a_ms = Ms(Clock::now() - t0);
  });
  std::thread b([task_id, &b_ms] {
    pthread_setname_np(pthread_self(), "worker-b");
    libdump::trace::Log("phase", "b waits", task_id);
    const auto t0 = Clock::now();
    {
      libdump::trace::Region r("lock-wait", task_id);
      g_wait_began.store(Clock::now().time_since_epoch().count());
      PhasesWaitForLock(g_mu);
    }
    b_ms = Ms(Clock::now() - t0);
  });
  // The mutex is released 50 ms after thread b began to wait for it; the
  // last millisecond spun, so that only b's wake-up adds to the 50 ms.
  while (g_wait_began.load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  const Clock::time_point release{Clock::duration(g_wait_began.load()) + std::chrono::milliseconds(50)};
  std::this_thread::sleep_until(release - std::chrono::milliseconds(1));
  while (Clock::now() < release) {
  }
  held.unlock();
  a.join();
  b.join();
  std::printf("phase-a=%.3f lock-wait=%.3f\n", a_ms, b_ms);
  std::fflush(stdout);
  task.End();
  {
    libdump::trace::Region r("main-before-end");
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a heap tick or more
  }
  if (snapshot) {
    const int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int pfd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || pfd < 0 || snapshot_recorder.WriteTo(fd) < 0 || !snapshot_recorder.WriteCPUProfileTo(pfd)) return 4;
    close(fd);
    close(pfd);
    return snapshot_recorder.Stop() ? 0 : 5;
  }
  libdump::trace::Region last("crashing");
  if (std::strcmp(argv[1], "abort") == 0) std::abort();
  volatile int* null = nullptr;
  *null = 1;
  return 0;
}
