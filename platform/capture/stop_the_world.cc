#include "platform/capture/stop_the_world.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "platform/env/env_var.h"
#include "platform/proc/thread_list.h"

namespace libdump::capture {

namespace {

// One stop at a time; `g_generation` changes on every Resume and is what
// stopped threads wait on. A pthread mutex, not std::mutex, so that a forked
// child can make it free again (ForkChild).
pthread_mutex_t g_stop_mutex = PTHREAD_MUTEX_INITIALIZER;
std::atomic<uint32_t> g_generation{0};
std::atomic<uint32_t> g_stop_generation{0};  // g_generation when the current stop began
std::atomic<pid_t> g_stop_pid{0};            // the process whose dumper asked for the stop
std::atomic<uint32_t> g_answers{0};     // handlers that stopped or deferred since Stop began
std::atomic<int> g_in_handler{0};       // threads still inside the handler
std::atomic<ThreadSlot*> g_slots{nullptr};
std::atomic<size_t> g_nslots{0};
std::atomic<StopGate*> g_gate{nullptr};
StopGate g_gate_storage;

// A stop that arrived inside a critical section: its slot, and which stop it
// was. A stale one (the stop timed out and ended, or the thread forked and
// this is the child, where no dumper exists) must never park.
thread_local int t_pending_slot = -1;
thread_local uint32_t t_pending_generation = 0;

long Futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void Park(ThreadSlot& slot, const ucontext_t* uc) {
  // Capture first, then announce: the dumper reads regs after it sees kStopped.
  if (uc != nullptr) {
    std::memcpy(slot.regs, uc->uc_mcontext.gregs, sizeof slot.regs);
    slot.regs_addr = reinterpret_cast<uint64_t>(&uc->uc_mcontext.gregs[0]);
  }
  slot.thread_pointer = reinterpret_cast<uint64_t>(__builtin_thread_pointer());
  // Waiting for the stop's own generation, not the current one, lets a signal
  // that arrives after Resume() fall straight through.
  const uint32_t gen = g_stop_generation.load(std::memory_order_acquire);
  slot.state.store(static_cast<int>(StopState::kStopped), std::memory_order_release);
  g_answers.fetch_add(1, std::memory_order_acq_rel);
  Futex(&g_answers, FUTEX_WAKE_PRIVATE, 1, nullptr);
  while (g_generation.load(std::memory_order_acquire) == gen) {
    Futex(&g_generation, FUTEX_WAIT_PRIVATE, gen, nullptr);
  }
}

// Async-signal-safe: atomics, futex and gettid only.
void Handler(int, siginfo_t* si, void* ctx) {
  const int saved_errno = errno;
  ThreadSlot* slots = g_slots.load(std::memory_order_acquire);
  const auto index = static_cast<size_t>(si->si_value.sival_int);
  if (si->si_code == SI_QUEUE && si->si_pid == getpid() && slots != nullptr &&
      index < g_nslots.load(std::memory_order_acquire) && slots[index].tid == Gettid()) {
    g_in_handler.fetch_add(1, std::memory_order_acq_rel);
    StopGate* gate = g_gate.load(std::memory_order_acquire);
    if (gate != nullptr && gate->inside != nullptr && gate->inside()) {
      // StopIfRequested() parks on the way out.
      t_pending_generation = g_stop_generation.load(std::memory_order_acquire);
      t_pending_slot = static_cast<int>(index);
    } else {
      Park(slots[index], static_cast<const ucontext_t*>(ctx));
    }
    g_in_handler.fetch_sub(1, std::memory_order_acq_rel);
  }
  errno = saved_errno;
}

bool InstallHandler() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = Handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);  // nothing else runs on a stopped thread
    ok = sigaction(StopSignal(), &sa, nullptr) == 0;
    // Child-only and allocation-free: its place among other handlers does not matter.
    if (ok) pthread_atfork(nullptr, nullptr, ForkChild);
  });
  return ok;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

int StopSignal() {
  static const int sig = env::GetSignal("LIBDUMP_STOP_SIGNAL", SIGRTMIN + 4);
  return sig;
}

void SetStopGate(StopGate gate) {
  g_gate_storage = gate;
  g_gate.store(&g_gate_storage, std::memory_order_release);
}

void StopIfRequested() {
  const int index = t_pending_slot;
  if (index < 0) return;
  t_pending_slot = -1;
  ThreadSlot* slots = g_slots.load(std::memory_order_acquire);
  if (slots == nullptr) return;
  // The stop that was requested must be the one still running, in this
  // process: a child forked with a request pending has no dumper to resume
  // it, and a request left from a stop that gave up on this thread names a
  // slot that is now another thread's. getpid is a system call, but only a
  // deferred stop comes this far.
  if (t_pending_generation != g_stop_generation.load(std::memory_order_acquire) ||
      g_stop_pid.load(std::memory_order_acquire) != getpid()) {
    return;
  }
  // Block signals as the handler would have, then park with the context of
  // this call site: its registers are as good as the interrupted ones, the
  // critical section having released everything.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g_in_handler.fetch_add(1, std::memory_order_acq_rel);
  ucontext_t uc;
  getcontext(&uc);
  Park(slots[index], &uc);
  g_in_handler.fetch_sub(1, std::memory_order_acq_rel);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

WorldStop::~WorldStop() {
  if (stopped_) Resume();
}

bool WorldStop::SignalNewThreads(bool* added) {
  *added = false;
  pid_t tids[512];
  const long n = proc::ListThreads(tids, 512);
  if (n < 0 || n > 512) {
    overflow_ = n > 512;
    return false;
  }
  const pid_t self = Gettid();
  for (long i = 0; i < n; ++i) {
    if (tids[i] == self) continue;
    bool known = false;
    for (size_t j = 0; j < count_ && !known; ++j) known = slots_[j].tid == tids[i];
    if (known) continue;
    if (count_ == capacity_) {
      overflow_ = true;
      return false;
    }
    ThreadSlot& s = slots_[count_];
    s.tid = tids[i];
    s.regs_addr = 0;
    s.thread_pointer = 0;
    if (!proc::ReadThreadStat(s.tid, s.name, sizeof s.name, &s.sched_state)) {
      s.name[0] = '\0';
      s.sched_state = '?';
    }
    s.syscall_nr = proc::ReadThreadSyscall(s.tid);
    s.state.store(static_cast<int>(StopState::kSignalled), std::memory_order_release);
    g_nslots.store(count_ + 1, std::memory_order_release);
    siginfo_t si;
    std::memset(&si, 0, sizeof si);
    si.si_signo = StopSignal();
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = static_cast<int>(count_);
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), s.tid, si.si_signo, &si) != 0) {
      s.state.store(static_cast<int>(StopState::kGone), std::memory_order_release);
    }
    ++count_;
    *added = true;
  }
  return true;
}

void WorldStop::WaitForAnswers(int timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  for (;;) {
    bool waiting = false;
    for (size_t i = 0; i < count_; ++i) {
      ThreadSlot& s = slots_[i];
      if (s.state.load(std::memory_order_acquire) != static_cast<int>(StopState::kSignalled)) continue;
      // A thread that exited after we listed it never answers.
      if (syscall(SYS_tgkill, getpid(), s.tid, 0) != 0) {
        s.state.store(static_cast<int>(StopState::kGone), std::memory_order_release);
        continue;
      }
      waiting = true;
    }
    if (!waiting) return;
    if (NowMs() >= deadline) break;
    const uint32_t seen = g_answers.load(std::memory_order_acquire);
    timespec ts{0, 1000000};  // re-check every millisecond for threads that died
    Futex(&g_answers, FUTEX_WAIT_PRIVATE, seen, &ts);
  }
  for (size_t i = 0; i < count_; ++i) {
    int expected = static_cast<int>(StopState::kSignalled);
    slots_[i].state.compare_exchange_strong(expected, static_cast<int>(StopState::kUnresponsive));
  }
}

bool WorldStop::Stop(int timeout_ms) {
  if (!InstallHandler()) return false;
  pthread_mutex_lock(&g_stop_mutex);
  g_stop_pid.store(getpid(), std::memory_order_release);
  count_ = 0;
  overflow_ = false;
  g_answers.store(0, std::memory_order_release);
  g_stop_generation.store(g_generation.load(std::memory_order_acquire), std::memory_order_release);
  g_slots.store(slots_, std::memory_order_release);
  g_nslots.store(0, std::memory_order_release);
  stopped_ = true;
  // Threads may start threads until they are stopped: list again until a
  // pass finds nobody new.
  bool added = true;
  while (added) {
    if (!SignalNewThreads(&added)) {
      Resume();
      return false;
    }
    WaitForAnswers(timeout_ms);
  }
  return true;
}

void WorldStop::Resume() {
  if (!stopped_) return;
  stopped_ = false;
  // Unresponsive threads may still take the signal later: with no slots they
  // return at once, and one that got past that check finds the generation moved.
  g_nslots.store(0, std::memory_order_release);
  g_slots.store(nullptr, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  Futex(&g_generation, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr);
  while (g_in_handler.load(std::memory_order_acquire) != 0) sched_yield();
  pthread_mutex_unlock(&g_stop_mutex);
}

void ForkChild() {
  // The child has one thread, the one that forked, and no dumper: no stop
  // is running here, whatever the parent was doing. A stop held by the
  // parent's dumper (fork during a dump) is released, so the child can dump.
  t_pending_slot = -1;
  g_slots.store(nullptr, std::memory_order_release);
  g_nslots.store(0, std::memory_order_release);
  g_in_handler.store(0, std::memory_order_release);
  g_stop_pid.store(0, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  static const pthread_mutex_t kFree = PTHREAD_MUTEX_INITIALIZER;
  g_stop_mutex = kFree;
}

}  // namespace libdump::capture
