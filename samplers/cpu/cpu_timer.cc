#include "samplers/cpu/cpu_timer.h"

#include <errno.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>

namespace libdump::samplers {

namespace {

// The kernel's encoding of another thread's CPU clock (CPUCLOCK_PERTHREAD |
// CPUCLOCK_SCHED), what pthread_getcpuclockid returns for a pthread_t. Built
// from the tid so threads libdump did not create can be armed too.
clockid_t ThreadCpuClock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 4 | 2);
}

timespec Ns(int64_t ns) { return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)}; }

}  // namespace

bool ThreadCpuTimerEngine::Start(int64_t period_ns) {
  std::lock_guard<std::mutex> g(mu_);
  period_ns_ = period_ns;
  running_ = true;
  armed_ = 0;
  return true;
}

void ThreadCpuTimerEngine::Stop() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [tid, t] : timers_) timer_delete(t);
  timers_.clear();
  running_ = false;
}

bool ThreadCpuTimerEngine::AddThread(pid_t tid, bool replace) {
  std::lock_guard<std::mutex> g(mu_);
  if (!running_) return false;
  auto it = timers_.find(tid);
  if (it != timers_.end()) {
    // One timer per thread, or its samples would count twice.
    if (!replace) return true;
    timer_delete(it->second);
    timers_.erase(it);
  }
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev._sigev_un._tid = tid;
  sev.sigev_value.sival_int = tag_;
  timer_t t;
  if (timer_create(ThreadCpuClock(tid), &sev, &t) != 0) return false;  // the thread is gone
  // The first expiry is uniform in (0, period]: a thread that runs for c ns
  // then gets c/period samples in expectation, where a full first period
  // would miss every thread shorter than one period.
  itimerspec its{};
  its.it_interval = Ns(period_ns_);
  its.it_value = Ns(1 + static_cast<int64_t>(rng_() % static_cast<uint64_t>(period_ns_)));
  if (timer_settime(t, 0, &its, nullptr) != 0) {
    timer_delete(t);
    return false;
  }
  timers_.emplace(tid, t);
  ++armed_;
  return true;
}

void ThreadCpuTimerEngine::RemoveThread(pid_t tid) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = timers_.find(tid);
  if (it == timers_.end()) return;
  timer_delete(it->second);
  timers_.erase(it);
}

void ThreadCpuTimerEngine::Prune(const std::vector<pid_t>& live) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = timers_.begin(); it != timers_.end();) {
    if (!std::binary_search(live.begin(), live.end(), it->first)) {
      timer_delete(it->second);
      it = timers_.erase(it);
    } else {
      ++it;
    }
  }
}

uint64_t ThreadCpuTimerEngine::threads() const { return armed_; }

bool ProcessTimerEngine::Start(int64_t period_ns) {
  itimerval v{};
  v.it_interval.tv_sec = period_ns / 1000000000;
  v.it_interval.tv_usec = (period_ns % 1000000000) / 1000;
  v.it_value = v.it_interval;
  return setitimer(ITIMER_PROF, &v, nullptr) == 0;
}

void ProcessTimerEngine::Stop() {
  itimerval v{};
  setitimer(ITIMER_PROF, &v, nullptr);
}

}  // namespace libdump::samplers
