// The CPU profiler: per-thread CPU timers deliver SIGPROF, the handler pushes
// the interrupted stack into a lock-free ring, a background thread drains the
// ring into per-stack counts, and StopCPUProfile writes them as pprof.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "samplers/cpu/cpu_timer.h"
#include "platform/env/env_var.h"
#include "platform/proc/helper_threads.h"
#include "libdump/format/pprof_profile.h"
#include "libdump/profiler.h"
#include "samplers/common/own_allocations.h"
#include "samplers/cpu/sample_ring.h"
#include "samplers/cpu/sigprof_hook.h"
#include "samplers/unwind/frame_pointer_walk.h"
#include "samplers/symbolize/pprof_symbolizer.h"
#include "samplers/threads/thread_create.h"
#include "platform/proc/thread_list.h"
#include "samplers/unwind/unwind_table.h"
#include "samplers/common/bucket_snapshot.h"

namespace libdump {
namespace samplers {
namespace {

// The worker drains the ring and scans /proc/self/task every 100 ms, and
// sooner when the handlers have pushed half a ring since it was last told.
// It used to wake every 10 ms: 100 wakeups a second, each preempting a busy
// thread and costing 25-30 µs of CPU, several times what the samples
// themselves cost (docs/sampling.md). The scan finds threads that did not
// start through pthread_create (or started before the profile); new pthreads
// are armed by the hook below as they start, so the scan can be infrequent.
constexpr int kDrainIntervalMs = 100;
constexpr size_t kRingCapacity = 4096;

std::atomic<bool> g_active{false};
std::atomic<SampleRing*> g_ring{nullptr};
// An eventfd the handlers write to wake the worker: write(2) is
// async-signal-safe. Made once and never closed, like the ring, so that a
// handler racing a stop never writes to a descriptor that was reused.
std::atomic<int> g_wake_fd{-1};
std::atomic<uint64_t> g_signals{0};
std::atomic<uint64_t> g_overruns{0};
std::atomic<int> g_hz{100};
std::atomic<SigprofHook> g_recorder_hook{nullptr};

struct Session {
  int fd = -1;
  int hz = 100;
  int64_t start_realtime_ns = 0;
  int64_t start_mono_ns = 0;
  std::unique_ptr<TimerEngine> engine;
  std::unordered_map<std::vector<uintptr_t>, uint64_t, StackVectorHash> counts;
  std::thread worker;
  std::atomic<bool> stop{false};
};

std::mutex g_session_mu;  // Start/Stop
Session* g_session = nullptr;
std::atomic<TimerEngine*> g_engine{nullptr};  // for the pthread_create hook

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int64_t NowNs(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void WakeWorker() {
  const uint64_t one = 1;
  if (write(g_wake_fd.load(std::memory_order_relaxed), &one, sizeof one) < 0) {
    // EAGAIN: the counter is full, the worker has been told already.
  }
}

// SIGPROF handler. Runs on the thread that used the CPU, at any instruction,
// possibly inside malloc or holding a lock: it only reads registers and
// stack memory (checked), and pushes into the preallocated ring. errno is
// saved because process_vm_readv may set it under the interrupted code.
void OnSigprof(int, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  if (info->si_code == SI_TIMER && info->si_value.sival_int == kRecorderTimerTag) {
    if (SigprofHook h = g_recorder_hook.load(std::memory_order_acquire)) h(ucontext);
    errno = saved_errno;
    return;
  }
  // The /debug/pprof server's threads are not the program's: their samples
  // are dropped, as their allocations are (own_allocations.h).
  if (t_profiler_thread) {
    g_signals.fetch_add(1, std::memory_order_relaxed);
    errno = saved_errno;
    return;
  }
  SampleRing* ring = g_ring.load(std::memory_order_acquire);
  if (g_active.load(std::memory_order_acquire) && ring != nullptr) {
    uintptr_t pcs[kMaxFrames];
    const size_t n = CaptureSignalStack(ucontext, pcs, kMaxFrames);
    // Expirations the kernel merged into this one signal (the thread did not
    // run the handler in time) are CPU it used: counted as weight, not lost.
    const int over = info->si_code == SI_TIMER && info->si_overrun > 0 ? info->si_overrun : 0;
    // No thread id: the profile does not use one, and gettid, a system call,
    // measured ~2 µs here (page-table isolation under a hypervisor).
    const size_t taken = ring->Push(1 + static_cast<uint64_t>(over), pcs, n);
    if (taken != 0 && taken % (kRingCapacity / 2) == 0) WakeWorker();
    g_signals.fetch_add(1, std::memory_order_relaxed);
    g_overruns.fetch_add(static_cast<uint64_t>(over), std::memory_order_relaxed);
  }
  errno = saved_errno;
}

void InstallHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never uninstalled: a SIGPROF still pending after StopCPUProfile must
    // find a handler, not the default action (which kills the process).
    struct sigaction sa {};
    sa.sa_sigaction = OnSigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, nullptr);
  });
}

void Drain(Session& s) {
  SampleRing* ring = g_ring.load(std::memory_order_relaxed);
  std::vector<uintptr_t> key;
  ring->Drain([&](const StackSample& x) {
    key.assign(x.pcs, x.pcs + x.depth);
    s.counts[key] += x.weight;
  });
}

void Worker(Session* s) {
  OwnAllocationScope own;  // the stack counts and the thread scans
  const int fd = g_wake_fd.load(std::memory_order_relaxed);
  while (!s->stop.load(std::memory_order_acquire)) {
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, kDrainIntervalMs);
    uint64_t told;
    if (read(fd, &told, sizeof told) < 0) {
      // EAGAIN: woken by the timeout, not by a handler.
    }
    Drain(*s);
    // Modules loaded or unloaded since the last look (dlopen by a path the
    // dlopen hook does not see): new rules, and old snapshots freed once no
    // handler reads them.
    if (UnwindTables::Stale()) UnwindTables::Refresh();
    UnwindTables::Reclaim();
    if (s->engine->per_thread()) {
      const std::vector<pid_t> live = proc::ListThreads();
      s->engine->Prune(live);
      for (pid_t t : live) s->engine->AddThread(t, false);
    }
  }
}

bool WriteProfile(Session& s) {
  const int64_t period = 1000000000 / s.hz;
  pprof::ProfileBuilder b({{"samples", "count"}, {"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, period);
  b.set_time_nanos(s.start_realtime_ns);
  b.set_duration_nanos(NowNs(CLOCK_MONOTONIC) - s.start_mono_ns);
  ProfileSymbolizer sym(b);
  for (const auto& [stack, count] : s.counts) {
    const std::vector<uint64_t> locs = sym.Locations(stack);
    const int64_t v[] = {static_cast<int64_t>(count), static_cast<int64_t>(count) * period};
    b.AddSample(locs, v);
  }
  return b.WriteGzip(s.fd);
}

// A thread started through pthread_create (interposed in thread_create.cc)
// arms its own timer before running user code, so even a thread that lives
// less than a scan interval is profiled from its first instruction.
struct ThreadExitGuard {
  pid_t tid;
  ~ThreadExitGuard() {
    if (TimerEngine* e = g_engine.load(std::memory_order_acquire)) e->RemoveThread(tid);
  }
};

void OnThreadStart() {
  if (TimerEngine* e = g_engine.load(std::memory_order_acquire)) {
    OwnAllocationScope own;  // the engine's entry and the exit guard's registration
    const pid_t tid = Tid();
    // replace: a timer under this tid belongs to a dead thread.
    e->AddThread(tid, true);
    thread_local ThreadExitGuard guard{tid};
    (void)guard;
  }
}

}  // namespace

void SetSigprofHook(SigprofHook hook) {
  InstallHandler();
  g_recorder_hook.store(hook, std::memory_order_release);
}

}  // namespace samplers

namespace samplers {
namespace {
// fork: the child has only the forking thread. The session's worker is not
// there and neither are its timers (fork does not inherit them), and its file
// is the parent's. The child abandons the session, as if none had started: a
// stop there (the preload's at-exit one included) must neither wait for a
// worker that does not exist nor write into the parent's profile.
void ForkPrepare() { g_session_mu.lock(); }
void ForkParent() { g_session_mu.unlock(); }
void ForkChild() {
  g_session = nullptr;  // left behind: its thread is the parent's
  g_active.store(false, std::memory_order_release);
  g_engine.store(nullptr, std::memory_order_release);
  // The eventfd is shared with the parent, whose handlers write to it: a
  // profile the child starts gets its own. No handler runs here now (the
  // child has one thread, no timers and no pending SIGPROF).
  if (const int fd = g_wake_fd.exchange(-1, std::memory_order_relaxed); fd >= 0) close(fd);
  g_session_mu.unlock();
}
}  // namespace
}  // namespace samplers

namespace samplers {
namespace {
// Around the program's credential changes (helper_threads.h) the worker
// ends and starts again; the session, its timers and its counts stay.
bool StopWorker() {
  g_session_mu.lock();  // until RestartWorker, which only follows a true
  Session* s = g_session;
  if (s == nullptr || !s->worker.joinable()) {
    g_session_mu.unlock();
    return false;
  }
  s->stop.store(true, std::memory_order_release);
  WakeWorker();
  s->worker.join();
  s->stop.store(false, std::memory_order_release);
  return true;
}

void RestartWorker() {
  try {
    OwnAllocationScope own;
    g_session->worker = std::thread(Worker, g_session);
  } catch (const std::system_error&) {
    // No worker: the ring fills and drops samples until the profile stops.
  }
  g_session_mu.unlock();
}

const proc::HelperThread kWorkerHelper{StopWorker, RestartWorker};
}  // namespace
}  // namespace samplers

bool StartCPUProfile(int fd) {
  using namespace samplers;
  static const int fork_handlers = pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  (void)fork_handlers;
  SetThreadStartHook(OnThreadStart);
  OwnAllocationScope own;
  // The rules the handler unwinds frameless code with, for every module
  // loaded now; later ones are added by the dlopen hook and the worker.
  // Before the session's lock: a fork takes the loader's lock before that
  // one (capture/loader_gate.h), so it is never held across dl_iterate_phdr.
  UnwindTables::Refresh();
  std::lock_guard<std::mutex> g(g_session_mu);
  if (g_session != nullptr) {
    errno = EBUSY;
    return false;
  }
  InstallHandler();
  if (g_ring.load() == nullptr) g_ring.store(new SampleRing(kRingCapacity), std::memory_order_release);
  if (g_wake_fd.load() < 0) {
    const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return false;
    g_wake_fd.store(fd, std::memory_order_release);
  }
  // Samples pushed by handlers that raced the previous stop.
  g_ring.load()->Drain([](const StackSample&) {});
  auto* s = new Session;
  s->fd = fd;
  s->hz = g_hz.load();
  s->start_realtime_ns = NowNs(CLOCK_REALTIME);
  s->start_mono_ns = NowNs(CLOCK_MONOTONIC);
  const char* engine = env::Get("LIBDUMP_CPUPROFILE_ENGINE");
  if (engine != nullptr && std::strcmp(engine, "itimer") != 0 && std::strcmp(engine, "thread") != 0) {
    env::Warn("LIBDUMP_CPUPROFILE_ENGINE", engine, "is not thread or itimer", "thread");
    engine = nullptr;
  }
  if (engine != nullptr && std::strcmp(engine, "itimer") == 0) {
    s->engine = std::make_unique<ProcessTimerEngine>();
  } else {
    s->engine = std::make_unique<ThreadCpuTimerEngine>();
  }
  g_signals = 0;
  g_overruns = 0;
  g_active.store(true, std::memory_order_release);
  if (!s->engine->Start(1000000000 / s->hz)) {
    g_active.store(false);
    delete s;
    return false;
  }
  g_engine.store(s->engine.get(), std::memory_order_release);
  if (s->engine->per_thread()) {
    for (pid_t t : proc::ListThreads()) s->engine->AddThread(t, false);
  }
  s->worker = std::thread(Worker, s);
  g_session = s;
  proc::RegisterHelperThread(&kWorkerHelper);
  return true;
}

bool StopCPUProfile() { return StopCPUProfile(-1); }

bool StopCPUProfile(int fd) {
  using namespace samplers;
  OwnAllocationScope own;  // symbolization
  std::unique_lock<std::mutex> g(g_session_mu);
  Session* s = g_session;
  if (s == nullptr) return true;
  g_session = nullptr;
  g_active.store(false, std::memory_order_release);
  g_engine.store(nullptr, std::memory_order_release);
  s->engine->Stop();
  s->stop.store(true, std::memory_order_release);
  WakeWorker();
  if (s->worker.joinable()) s->worker.join();
  Drain(*s);
  g.unlock();
  if (fd >= 0) s->fd = fd;
  const bool ok = WriteProfile(*s);
  // The engine may still be referenced by a thread exit racing the stop, so
  // it is retired rather than freed: kept reachable (not a leak), one per
  // profiling session.
  static auto* retired = new std::vector<std::unique_ptr<TimerEngine>>;
  retired->push_back(std::move(s->engine));
  delete s;
  return ok;
}

void SetCPUProfileRate(int hz) {
  if (hz > 0 && hz <= 1000000) samplers::g_hz.store(hz);
}
int CPUProfileRate() { return samplers::g_hz.load(); }

CPUProfileStats GetCPUProfileStats() {
  using namespace samplers;
  CPUProfileStats st{g_signals.load(), g_overruns.load(), 0, 0};
  if (SampleRing* r = g_ring.load()) st.dropped = r->dropped();
  std::lock_guard<std::mutex> g(g_session_mu);
  if (g_session != nullptr) st.threads = g_session->engine->threads();
  return st;
}

}  // namespace libdump
