// Timer engines for the CPU profiler: what makes SIGPROF arrive on a thread
// after it has used a period of CPU. One class per mechanism, as in
// async-profiler, so the profiler does not care which one runs.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <vector>

namespace libdump::samplers {

class TimerEngine {
 public:
  virtual ~TimerEngine() = default;
  virtual const char* name() const = 0;
  virtual bool Start(int64_t period_ns) = 0;
  virtual void Stop() = 0;
  // Arms tid if it has no timer yet (or replace: the caller knows tid is a
  // new thread reusing the number of a dead one). Thread-safe.
  virtual bool AddThread(pid_t tid, bool replace) = 0;
  virtual void RemoveThread(pid_t tid) = 0;
  // Forgets threads that are not in live (sorted).
  virtual void Prune(const std::vector<pid_t>& live) = 0;
  virtual bool per_thread() const = 0;
  virtual uint64_t threads() const = 0;
};

// Go 1.18+'s mechanism: timer_create on each thread's own CPU clock with
// SIGEV_THREAD_ID, so every thread is charged exactly for its own CPU and the
// signal goes to it. A process-wide timer cannot do that: its signals land on
// any running thread, and standard signals coalesce beyond ~2.5 busy cores.
class ThreadCpuTimerEngine final : public TimerEngine {
 public:
  // tag goes into each signal's si_value (sigprof_hook.h).
  explicit ThreadCpuTimerEngine(int tag = 0) : tag_(tag) {}
  const char* name() const override { return "thread_cputime"; }
  bool Start(int64_t period_ns) override;
  void Stop() override;
  bool AddThread(pid_t tid, bool replace) override;
  void RemoveThread(pid_t tid) override;
  void Prune(const std::vector<pid_t>& live) override;
  bool per_thread() const override { return true; }
  uint64_t threads() const override;

 private:
  std::mutex mu_;
  std::map<pid_t, timer_t> timers_;
  int64_t period_ns_ = 0;
  bool running_ = false;
  uint64_t armed_ = 0;
  int tag_;
  std::mt19937_64 rng_{std::random_device{}()};
};

// setitimer(ITIMER_PROF): one process-wide CPU timer, the pre-1.18 Go and
// gperftools mechanism. Kept as the fallback for kernels without per-thread
// CPU timers and to show, side by side, what the per-thread engine fixes.
class ProcessTimerEngine final : public TimerEngine {
 public:
  const char* name() const override { return "itimer_prof"; }
  bool Start(int64_t period_ns) override;
  void Stop() override;
  bool AddThread(pid_t, bool) override { return true; }
  void RemoveThread(pid_t) override {}
  void Prune(const std::vector<pid_t>&) override {}
  bool per_thread() const override { return false; }
  uint64_t threads() const override { return 0; }
};

}  // namespace libdump::samplers
