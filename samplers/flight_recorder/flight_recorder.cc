// The flight recorder: annotations and samples appended to per-thread chunks
// of a bounded window (flight_recorder_buffer.h), a thread that adds heap
// statistics and thread exits every 100 ms and drops what is older than
// MinAge; the window's writers are trace_event_json.h and window_pprof.h.
#include "samplers/flight_recorder/flight_recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "samplers/cpu/cpu_timer.h"
#include "samplers/symbolize/crash_symbols.h"
#include "samplers/flight_recorder/flight_recorder_buffer.h"
#include "samplers/flight_recorder/flight_recorder_clock.h"
#include "samplers/flight_recorder/flight_recorder_names.h"
#include "platform/proc/helper_threads.h"
#include "libdump/profiler.h"
#include "samplers/interpose/wait_state.h"
#include "libdump/flight_recorder.h"
#include "libdump/heap.h"
#include "platform/output/output_file.h"
#include "samplers/common/own_allocations.h"
#include "samplers/cpu/sigprof_hook.h"
#include "samplers/unwind/frame_pointer_walk.h"
#include "platform/proc/thread_list.h"
#include "samplers/flight_recorder/trace_event_json.h"
#include "samplers/flight_recorder/frame_namer.h"
#include "samplers/flight_recorder/window_pprof.h"

// libdump's allocator, when it is in the process (weak, as in heap_profiler.cc).
namespace libdump {
HeapStats GetHeapStats() __attribute__((weak));
// The pthread interposition, when it is linked (pthread_interpose.cc).
bool WaitsInterposed() __attribute__((weak));
}  // namespace libdump

extern "C" {
unsigned char libdump_trace_on = 0;
}

namespace libdump {
namespace {
bool TraceOn() { return __atomic_load_n(&libdump_trace_on, __ATOMIC_RELAXED) != 0; }
void SetTraceOn(bool on) { __atomic_store_n(&libdump_trace_on, on ? 1 : 0, __ATOMIC_RELEASE); }
}  // namespace

namespace samplers::flight {
namespace {

// CPU samples per second of each thread's CPU while the recorder runs: a
// fifth of a CPU profile's default, enough to see where a thread spent the
// last seconds, at a cost nobody needs to turn off.
constexpr int kCpuHz = 20;
constexpr int kTickMs = 100;

struct Session {
  Session* retired_next = nullptr;  // stopped sessions stay reachable (see Stop)
  Window* window = nullptr;
  uint32_t* order = nullptr;      // Pin's scratch: one entry per chunk
  uint64_t* task_set = nullptr;   // kTaskSet ids
  size_t scratch_bytes = 0;
  int64_t min_age_ns = 0;
  ThreadCpuTimerEngine engine{kRecorderTimerTag};
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
};

std::mutex g_start_mu;  // Start/Stop
Session* g_session = nullptr;
// What annotations and handlers read. Never freed: a thread that loaded the
// pointer just before a stop may still use it.
std::atomic<Window*> g_window{nullptr};
std::atomic<Session*> g_live{nullptr};
Session* g_retired = nullptr;  // under g_start_mu
uint64_t g_generation = 0;
std::atomic<uint64_t> g_next_task{1};
// The one snapshot writer: its tid, 0 when free.
std::atomic<int> g_writer{0};
std::atomic<bool> g_snapshot_requested{false};
// Waits at least this long go to the window; INT64_MAX while none runs.
std::atomic<int64_t> g_wait_threshold_setting{10000000};
std::atomic<int64_t> g_wait_threshold{INT64_MAX};
std::string* g_snapshot_pattern = nullptr;

int Gettid() { return static_cast<int>(syscall(SYS_gettid)); }

bool LockWriter(int wait_ms) {
  const int me = Gettid();
  for (int waited = 0;; ++waited) {
    int expected = 0;
    if (g_writer.compare_exchange_strong(expected, me, std::memory_order_acquire)) return true;
    if (expected == me || (wait_ms >= 0 && waited >= wait_ms)) return false;
    const timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
}
void UnlockWriter() { g_writer.store(0, std::memory_order_release); }

void Put64(uint8_t*& p, uint64_t v) {
  std::memcpy(p, &v, 8);
  p += 8;
}

// A thread's first event in this window: its name comes first. Outside a
// handler or hook, the thread also gets its CPU timer now rather than at
// the next scan (which would miss its first 100 ms); arming locks and
// allocates, which neither a signal handler nor the allocator's sample
// hook may.
__attribute__((noinline, cold)) void JoinWindow(Window* w, ThreadWriter& tw, int64_t ts) {
  if (!tw.in_hook) {
    if (Session* s = g_live.load(std::memory_order_acquire)) s->engine.AddThread(Gettid(), false);
  }
  char name[17] = {};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  const size_t len = strnlen(name, 16);
  if (uint8_t* p = w->Reserve(tw, kThreadName, static_cast<uint32_t>(len), ts, len)) {
    std::memcpy(p, name, len);
    w->Commit(tw);
  }
}

// Appends one event to the calling thread's chunk. busy keeps a signal
// handler on this thread (a CPU sample) out of a half-written event. The
// fast path: a load of the window, of the thread's writer (initial-exec
// TLS), two compares, the stores of the event, and Commit's two stores.
template <class Fill>
__attribute__((always_inline)) inline void Append(uint16_t type, uint32_t aux, size_t payload, int64_t ts,
                                                  Fill&& fill) {
  Window* w = g_window.load(std::memory_order_acquire);
  if (__builtin_expect(w == nullptr, 0)) return;
  ThreadWriter& tw = CurrentWriter();
  if (__builtin_expect(tw.busy, 0)) {
    w->stats().dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  tw.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (__builtin_expect(tw.generation != w->generation(), 0)) JoinWindow(w, tw, ts);
  if (uint8_t* p = w->Reserve(tw, type, aux, ts, payload)) {
    fill(p);
    w->Commit(tw);
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tw.busy = false;
}

void OnTick(void* ucontext) {
  uintptr_t pcs[kMaxFrames];
  const size_t n = CaptureSignalStack(ucontext, pcs, kMaxFrames);
  ThreadWriter& tw = CurrentWriter();
  const bool was = tw.in_hook;
  tw.in_hook = true;
  Append(kCpuSample, static_cast<uint32_t>(n), 8 + 8 * n, Ticks(), [&](uint8_t* p) {
    Put64(p, 1);
    std::memcpy(p, pcs, 8 * n);
  });
  tw.in_hook = was;
}

// ---- the recorder's thread ----

void RecordHeap() {
  uint64_t v[3] = {0, 0, 0};
  uint32_t full = 0;
  if (&GetHeapStats != nullptr) {
    const HeapStats h = GetHeapStats();
    v[0] = h.bytes_in_use;
    v[1] = h.total_allocated_bytes;
    v[2] = h.bytes_returned;
    full = 1;
  } else {
    const struct mallinfo2 m = mallinfo2();
    v[0] = m.uordblks + m.hblkhd;
  }
  Append(kHeap, full, sizeof v, Ticks(), [&](uint8_t* p) { std::memcpy(p, v, sizeof v); });
}

void ArmThreads(Session* s) {
  const std::vector<pid_t> tids = proc::ListThreads();
  s->engine.Prune(tids);
  for (pid_t t : tids) s->engine.AddThread(t, false);
}

void WriteRequestedSnapshot();

void Run(Session* s);

// Around the program's credential changes (helper_threads.h) the thread
// ends and starts again; the window and its timers stay.
bool StopRecorderThread() {
  g_start_mu.lock();  // until RestartRecorderThread, which only follows a true
  Session* s = g_session;
  if (s == nullptr || !s->thread.joinable()) {
    g_start_mu.unlock();
    return false;
  }
  {
    std::lock_guard<std::mutex> l(s->mu);
    s->stop = true;
  }
  s->cv.notify_all();
  s->thread.join();
  s->stop = false;
  return true;
}

void RestartRecorderThread() {
  try {
    g_session->thread = std::thread(Run, g_session);
  } catch (const std::system_error&) {
    // No thread: the window stays as it is until the recorder stops.
  }
  g_start_mu.unlock();
}

const proc::HelperThread kRecorderHelper{StopRecorderThread, RestartRecorderThread};

void Run(Session* s) {
  pthread_setname_np(pthread_self(), "libdump-flightr");
  t_wait.in_profiler = true;  // the recorder's own waits are not the program's
  std::unique_lock<std::mutex> l(s->mu);
  while (!s->stop) {
    s->cv.wait_for(l, std::chrono::milliseconds(kTickMs));
    if (s->stop) break;
    l.unlock();
    RefineClock();
    RecordHeap();
    s->window->SealDeadThreads([](uint32_t tid, int64_t last) {
      Append(kThreadExit, 0, 8, last, [&](uint8_t* p) { Put64(p, tid); });
    });
    const ClockMap clock = CurrentClockMap();
    s->window->Age(Ticks() - clock.TicksFor(s->min_age_ns));
    ArmThreads(s);
    // The crash handler's names follow dlopen and dlclose, as the unwind
    // tables do (unwind_watch.h), once they were prepared.
    if (crash_symbols::Prepared() && crash_symbols::Stale()) crash_symbols::Prepare();
    if (g_snapshot_requested.exchange(false)) WriteRequestedSnapshot();
    l.lock();
  }
}

void WriteRequestedSnapshot() {
  Session* s = g_live.load(std::memory_order_acquire);
  if (s == nullptr || g_snapshot_pattern == nullptr || !LockWriter(1000)) return;
  std::string path = output::ExpandPath(g_snapshot_pattern->c_str());
  for (int i = 1; access(path.c_str(), F_OK) == 0 && i < 1000; ++i) {
    path = output::ExpandPath(g_snapshot_pattern->c_str()) + "." + std::to_string(i);
  }
  output::PartialFile f(path, 0600);
  if (f.fd() >= 0) {
    SymbolNamer namer;
    if (WriteTraceEvents(*s->window, s->order, s->task_set, f.fd(), 0, &namer) >= 0) f.Commit();
  }
  UnlockWriter();
}

void ForkPrepare() { g_start_mu.lock(); }
void ForkParent() { g_start_mu.unlock(); }
void ForkChild() {
  // The recorder's thread and timers stay in the parent: the child records
  // nothing (its session is left behind, never joined).
  SetTraceOn(false);
  g_wait_profiling.fetch_and(~kFlightWaits, std::memory_order_relaxed);
  g_wait_threshold.store(INT64_MAX, std::memory_order_relaxed);
  g_window.store(nullptr, std::memory_order_relaxed);
  g_live.store(nullptr, std::memory_order_relaxed);
  if (g_session != nullptr) {
    g_session->retired_next = g_retired;
    g_retired = g_session;
  }
  g_session = nullptr;
  g_writer.store(0, std::memory_order_relaxed);
  g_start_mu.unlock();
}

}  // namespace

int64_t NowNs() { return MonotonicNs(); }

void RecordWait(const char* what, int64_t begin_ns, int64_t end_ns, const uintptr_t* pcs, size_t n) {
  if (!TraceOn()) return;
  n = std::min(n, kMaxFrames);
  const size_t len = strnlen(what, kMaxName);
  // The waits' times come from CLOCK_MONOTONIC: into ticks, by the map a
  // snapshot takes them back with.
  const ClockMap clock = CurrentClockMap();
  Append(kWait, static_cast<uint32_t>(n), 16 + 8 * n + len, clock.Ticks(end_ns), [&](uint8_t* p) {
    Put64(p, static_cast<uint64_t>(clock.Ticks(begin_ns)));
    const uint64_t l = len;
    Put64(p, l);
    std::memcpy(p, pcs, 8 * n);
    std::memcpy(p + 8 * n, what, len);
  });
}

void SetWaitThreshold(int64_t ns) {
  g_wait_threshold_setting.store(ns, std::memory_order_relaxed);
  if (Recording()) g_wait_threshold.store(ns, std::memory_order_relaxed);
}

bool WantsWait(int64_t ns) { return ns >= g_wait_threshold.load(std::memory_order_relaxed); }

void RecordAllocation(const void* p, size_t size, const uintptr_t* pcs, size_t n) {
  if (__builtin_expect(!TraceOn(), 1)) return;
  n = std::min(n, kMaxFrames);
  ThreadWriter& tw = CurrentWriter();
  const bool was = tw.in_hook;
  tw.in_hook = true;  // inside the allocator: arm no timer (that locks and allocates)
  Append(kAlloc, static_cast<uint32_t>(n), 16 + 8 * n, Ticks(), [&](uint8_t* d) {
    Put64(d, size);
    Put64(d, reinterpret_cast<uintptr_t>(p));
    std::memcpy(d, pcs, 8 * n);
  });
  tw.in_hook = was;
}

bool Recording() { return g_live.load(std::memory_order_acquire) != nullptr; }

int64_t WriteWindowSignalSafe(int fd, int sig, int wait_ms) {
  Session* s = g_live.load(std::memory_order_acquire);
  if (s == nullptr || !LockWriter(wait_ms)) return -1;
  CrashNamer namer;
  const int64_t r = WriteTraceEvents(*s->window, s->order, s->task_set, fd, sig, crash_symbols::Prepared() ? &namer : nullptr);
  UnlockWriter();
  return r;
}

int64_t WriteWindow(int fd) {
  Session* s = g_live.load(std::memory_order_acquire);
  if (s == nullptr) {
    errno = EINVAL;
    return -1;
  }
  if (!LockWriter(0)) {
    errno = EBUSY;
    return -1;
  }
  int64_t r;
  {
    SymbolNamer namer;
    r = WriteTraceEvents(*s->window, s->order, s->task_set, fd, 0, &namer);
  }
  const int err = errno;
  UnlockWriter();
  errno = err;
  return r;
}

bool WriteWindowCPUProfile(int fd) {
  Session* s = g_live.load(std::memory_order_acquire);
  if (s == nullptr) {
    errno = EINVAL;
    return false;
  }
  if (!LockWriter(0)) {
    errno = EBUSY;
    return false;
  }
  const bool ok = WriteWindowPprof(*s->window, s->order, 1000000000 / kCpuHz, fd);
  const int err = errno;
  UnlockWriter();
  errno = err;
  return ok;
}

void SetSnapshotPath(const char* pattern) { g_snapshot_pattern = new std::string(pattern); }
void RequestSnapshot() { g_snapshot_requested.store(true, std::memory_order_relaxed); }

}  // namespace samplers::flight

// ---- the public API ----

using namespace samplers::flight;

FlightRecorder::~FlightRecorder() {
  if (running_) Stop();
}

bool FlightRecorder::Start() {
  // The session, its window and what starting allocates are the recorder's,
  // not the program's.
  const samplers::OwnAllocationScope own(internal::OwnComponent::kFlightRecorder);
  static const int fork_handlers = pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  (void)fork_handlers;
  // The heap profiler reads the loader's module list as it installs, and
  // libunwind's first call does too: both before the start lock, which a
  // fork takes after the loader's (capture/loader_gate.h). Installing is
  // idempotent, and a start refused as busy finds it installed already.
  // libunwind's first call takes ~1 ms and some memory: only where waits come.
  if (&WaitsInterposed != nullptr) samplers::WarmWaitStackCapture();
  InstallHeapProfiler();
  std::lock_guard<std::mutex> g(g_start_mu);
  if (g_session != nullptr) {
    errno = EBUSY;
    return false;
  }
  auto* s = new Session;
  s->window = new Window;
  s->min_age_ns = min_age_.count();
  // On failure the session is retired with what it mapped.
  const auto fail = [s] {
    s->retired_next = g_retired;
    g_retired = s;
    errno = ENOMEM;
    return false;
  };
  CalibrateClock();
  if (!s->window->Init(max_bytes_, ++g_generation)) return fail();
  s->scratch_bytes = (s->window->chunks() * sizeof(uint32_t) + kTaskSet * 8 + 4095) & ~size_t{4095};
  void* scratch_mem = mmap(nullptr, s->scratch_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (scratch_mem == MAP_FAILED) return fail();
  s->task_set = static_cast<uint64_t*>(scratch_mem);
  s->order = reinterpret_cast<uint32_t*>(s->task_set + kTaskSet);
  g_live.store(s, std::memory_order_release);
  g_window.store(s->window, std::memory_order_release);
  SetTraceOn(true);
  s->engine.Start(1000000000 / kCpuHz);
  samplers::SetSigprofHook(OnTick);
  // Long waits from the pthread interposition (when it is linked), and the
  // heap profiler's sampled allocations (with libdump's allocator, whose
  // sampling, like Go's MemProfileRate, is then on; installed above).
  g_wait_threshold.store(g_wait_threshold_setting.load(std::memory_order_relaxed), std::memory_order_relaxed);
  samplers::g_wait_profiling.fetch_or(samplers::kFlightWaits, std::memory_order_relaxed);
  ArmThreads(s);
  s->thread = std::thread(Run, s);
  g_session = s;
  running_ = true;
  proc::RegisterHelperThread(&kRecorderHelper);
  return true;
}

bool FlightRecorder::Stop() {
  std::unique_lock<std::mutex> g(g_start_mu);
  Session* s = g_session;
  if (!running_ || s == nullptr) {
    running_ = false;
    errno = EINVAL;
    return false;
  }
  SetTraceOn(false);
  samplers::g_wait_profiling.fetch_and(~samplers::kFlightWaits, std::memory_order_relaxed);
  g_wait_threshold.store(INT64_MAX, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> l(s->mu);
    s->stop = true;
  }
  s->cv.notify_all();
  if (s->thread.joinable()) s->thread.join();
  s->engine.Stop();
  LockWriter(-1);  // waits for a WriteTo in progress
  g_window.store(nullptr, std::memory_order_release);
  g_live.store(nullptr, std::memory_order_release);
  s->window->Release();
  UnlockWriter();
  // Kept, not freed: a thread that loaded the window just before the stop
  // may still append to it. The pool's pages went back with Release.
  s->retired_next = g_retired;
  g_retired = s;
  g_session = nullptr;
  running_ = false;
  return true;
}

bool FlightRecorder::Enabled() const { return running_ && g_live.load(std::memory_order_acquire) != nullptr; }

int64_t FlightRecorder::WriteTo(int fd) {
  if (!Enabled()) {
    errno = EINVAL;
    return -1;
  }
  return WriteWindow(fd);
}

bool FlightRecorder::WriteCPUProfileTo(int fd) {
  if (!Enabled()) {
    errno = EINVAL;
    return false;
  }
  return WriteWindowCPUProfile(fd);
}

FlightRecorderStats GetFlightRecorderStats() {
  FlightRecorderStats st{};
  Session* s = g_live.load(std::memory_order_acquire);
  if (s == nullptr) return st;
  WindowStats& w = s->window->stats();
  st.dropped = w.dropped.load();
  st.recycled = w.recycled.load();
  st.aged = w.aged.load();
  st.chunks = s->window->chunks();
  st.chunk_bytes = kChunkBytes;
  st.metadata_bytes = s->window->metadata_bytes() + s->scratch_bytes;
  return st;
}

extern "C" int64_t libdump_region_begin_slow(const char* name, uint64_t task) {
  const int64_t ts = Ticks();
  const size_t len = strnlen(name, kMaxName);
  Append(kRegionBegin, static_cast<uint32_t>(len), 8 + len, ts, [&](uint8_t* p) {
    Put64(p, task);
    std::memcpy(p, name, len);
  });
  return ts;
}

extern "C" void libdump_region_end_slow(const char* name, int64_t begin, uint64_t task) {
  const size_t len = strnlen(name, kMaxName);
  Append(kRegionEnd, static_cast<uint32_t>(len), 16 + len, Ticks(), [&](uint8_t* p) {
    Put64(p, static_cast<uint64_t>(begin));
    Put64(p, task);
    std::memcpy(p, name, len);
  });
}

extern "C" uint32_t libdump_trace_intern(const char* name) { return Intern(name); }

// The interned regions: fixed-size events, no string to measure or copy.
extern "C" int64_t libdump_region_begin_id_slow(uint32_t name_id, uint64_t task) {
  const int64_t ts = Ticks();
  Append(kRegionBeginId, name_id, 8, ts, [&](uint8_t* p) { Put64(p, task); });
  return ts;
}

extern "C" void libdump_region_end_id_slow(uint32_t name_id, int64_t begin, uint64_t task) {
  Append(kRegionEndId, name_id, 16, Ticks(), [&](uint8_t* p) {
    Put64(p, static_cast<uint64_t>(begin));
    Put64(p, task);
  });
}

extern "C" uint64_t libdump_task_begin_slow(const char* name, uint64_t parent, int64_t* begin) {
  const uint64_t id = g_next_task.fetch_add(1, std::memory_order_relaxed);
  const int64_t ts = Ticks();
  *begin = ts;
  const size_t len = strnlen(name, kMaxName);
  Append(kTaskBegin, static_cast<uint32_t>(len), 16 + len, ts, [&](uint8_t* p) {
    Put64(p, id);
    Put64(p, parent);
    std::memcpy(p, name, len);
  });
  return id;
}

extern "C" void libdump_task_end_slow(const char* name, uint64_t id, int64_t begin) {
  const size_t len = strnlen(name, kMaxName);
  Append(kTaskEnd, static_cast<uint32_t>(len), 16 + len, Ticks(), [&](uint8_t* p) {
    Put64(p, id);
    Put64(p, static_cast<uint64_t>(begin));
    std::memcpy(p, name, len);
  });
}

extern "C" void libdump_trace_log_slow(const char* category, const char* message, uint64_t task) {
  const uint32_t clen = static_cast<uint32_t>(strnlen(category, kMaxName));
  const uint32_t tlen = static_cast<uint32_t>(strnlen(message, kMaxText));
  Append(kLog, 0, 16 + clen + tlen, Ticks(), [&](uint8_t* p) {
    Put64(p, task);
    std::memcpy(p, &clen, 4);
    std::memcpy(p + 4, &tlen, 4);
    std::memcpy(p + 8, category, clen);
    std::memcpy(p + 8 + clen, message, tlen);
  });
}

}  // namespace libdump

