#include "samplers/threads/thread_create.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <new>

#include "samplers/unwind/allocation_stack_capture.h"
#include "samplers/unwind/frame_pointer_walk.h"
#include "samplers/common/table_memory.h"
#include "platform/proc/thread_list.h"

namespace libdump::samplers {

struct ThreadCreateRecord {
  ThreadCreateRecord* next;  // free list, or the list of every record
  ThreadCreateRecord* all;
  void* (*fn)(void*);
  void* arg;
  // 0 while reserved (the thread is being created), its tid once it runs.
  std::atomic<pid_t> tid;
  bool in_use;
  uint32_t depth;
  uintptr_t pcs[kMaxFrames];
};

namespace {

constexpr size_t kChunkRecords = 64;

// Under g_lock: the free list and the list of every record made.
TableLock g_lock;
ThreadCreateRecord* g_free = nullptr;
ThreadCreateRecord* g_all = nullptr;

pthread_key_t g_key;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
// The calling thread's record, for the fork child (initial-exec: no
// __tls_get_addr, which may allocate).
thread_local ThreadCreateRecord* t_record __attribute__((tls_model("initial-exec"))) = nullptr;

std::atomic<void (*)()> g_start_hook{nullptr};
// Whether creating stacks are captured: the first capture sets libunwind up
// (~1 ms, ~400 KB resident), which a process that never asks for the
// profile should not pay.
std::atomic<bool> g_recording{false};

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void PutLocked(ThreadCreateRecord* r) {
  r->in_use = false;
  r->tid.store(0, std::memory_order_relaxed);
  r->next = g_free;
  g_free = r;
}

// The child of fork has only the forking thread: every other record is
// given back, and the forking thread's takes its new tid.
void ForkPrepare() { g_lock.Lock(); }
void ForkParent() { g_lock.Unlock(); }
void ForkChild() {
  for (ThreadCreateRecord* r = g_all; r != nullptr; r = r->all) {
    if (r->in_use && r != t_record) PutLocked(r);
  }
  if (t_record != nullptr) t_record->tid.store(Tid(), std::memory_order_relaxed);
  g_lock.Unlock();
}

void Release(void* p) {
  auto* r = static_cast<ThreadCreateRecord*>(p);
  if (t_record == r) t_record = nullptr;
  g_lock.Lock();
  PutLocked(r);
  g_lock.Unlock();
}

void Init() {
  pthread_key_create(&g_key, Release);
  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
}

// A new chunk's records on the free list; false if none could be mapped.
bool GrowLocked() {
  void* p = mmap(nullptr, kChunkRecords * sizeof(ThreadCreateRecord), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  auto* chunk = static_cast<ThreadCreateRecord*>(p);
  for (size_t i = 0; i < kChunkRecords; ++i) {
    ThreadCreateRecord* r = new (&chunk[i]) ThreadCreateRecord{};
    r->all = g_all;
    g_all = r;
    PutLocked(r);
  }
  return true;
}

}  // namespace

// Named in profiles; its address stands for "no creation recorded".
__attribute__((noipa)) void CreatorNotRecorded() { asm volatile("" ::: "memory"); }

uintptr_t CreatorNotRecordedMarker() { return reinterpret_cast<uintptr_t>(&CreatorNotRecorded) + 1; }

__attribute__((noinline)) ThreadCreateRecord* BeginThreadCreate(void* (*fn)(void*), void* arg) {
  pthread_once(&g_once, Init);
  g_lock.Lock();
  if (g_free == nullptr && !GrowLocked()) {
    g_lock.Unlock();
    return nullptr;
  }
  ThreadCreateRecord* r = g_free;
  g_free = r->next;
  r->in_use = true;
  g_lock.Unlock();
  r->fn = fn;
  r->arg = arg;
  // Outside the lock: a walk that falls back to libunwind takes microseconds.
  r->depth = g_recording.load(std::memory_order_relaxed)
                 ? static_cast<uint32_t>(CaptureAllocationStack(r->pcs, kMaxFrames)) : 0;
  return r;
}

void CancelThreadCreate(ThreadCreateRecord* r) {
  g_lock.Lock();
  PutLocked(r);
  g_lock.Unlock();
}

void* RunCreatedThread(void* record) {
  auto* r = static_cast<ThreadCreateRecord*>(record);
  void* (*const fn)(void*) = r->fn;
  void* const arg = r->arg;
  t_record = r;
  r->tid.store(Tid(), std::memory_order_release);
  // Given back by the key's destructor as the thread ends, however it ends.
  // Not by a C++ destructor in this frame, which pthread_exit and
  // cancellation reach through a forced unwind: in a program that finds
  // libunwind's _Unwind_* functions before libgcc_s's (as one linking
  // libunwind first does), libstdc++'s personality routine then reads
  // libgcc's unwind context with libunwind's accessors and crashes. The
  // key costs ~700 instructions at each thread's exit (glibc scans every
  // key once one is set). Keys below 32 live in the thread descriptor:
  // setting it allocates nothing.
  pthread_setspecific(g_key, r);
  if (void (*hook)() = g_start_hook.load(std::memory_order_acquire)) hook();
  return fn(arg);
}

size_t ThreadCreateRecordsInUse() {
  size_t n = 0;
  g_lock.Lock();
  for (ThreadCreateRecord* r = g_all; r != nullptr; r = r->all) n += r->in_use ? 1 : 0;
  g_lock.Unlock();
  return n;
}

void SetThreadCreateRecording(bool on) {
  if (on) WarmStackCapture();  // libunwind's set-up now, not in a pthread_create
  g_recording.store(on, std::memory_order_relaxed);
}

void SetThreadStartHook(void (*hook)()) { g_start_hook.store(hook, std::memory_order_release); }

std::vector<ThreadCreation> LiveThreadCreations() {
  const std::vector<pid_t> tids = proc::ListThreads();  // sorted
  std::vector<ThreadCreation> out;
  out.reserve(tids.size());
  for (pid_t t : tids) out.push_back({t, {}});
  // Stacks are copied into vectors reserved outside the lock: the lock is
  // taken inside pthread_create, which the allocator may call.
  for (ThreadCreation& c : out) c.stack.reserve(kMaxFrames);
  g_lock.Lock();
  for (ThreadCreateRecord* r = g_all; r != nullptr; r = r->all) {
    if (!r->in_use) continue;
    const pid_t tid = r->tid.load(std::memory_order_acquire);
    const auto it = std::lower_bound(out.begin(), out.end(), tid,
                                     [](const ThreadCreation& c, pid_t t) { return c.tid < t; });
    if (tid == 0 || it == out.end() || it->tid != tid) continue;  // not started yet, or gone
    it->stack.assign(r->pcs, r->pcs + r->depth);
  }
  g_lock.Unlock();
  return out;
}

}  // namespace libdump::samplers

#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
  using Real = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "pthread_create"));
  // Neither the profile nor the CPU profiler's hook wants the thread.
  if (!libdump::samplers::g_recording.load(std::memory_order_relaxed) &&
      libdump::samplers::g_start_hook.load(std::memory_order_relaxed) == nullptr) {
    return real(thread, attr, fn, arg);
  }
  libdump::samplers::ThreadCreateRecord* r = libdump::samplers::BeginThreadCreate(fn, arg);
  if (r == nullptr) return real(thread, attr, fn, arg);  // no memory for a record: unrecorded
  const int rc = real(thread, attr, libdump::samplers::RunCreatedThread, r);
  if (rc != 0) libdump::samplers::CancelThreadCreate(r);
  return rc;
}
#endif

namespace libdump {
void EnableThreadCreateProfile() { samplers::SetThreadCreateRecording(true); }
}  // namespace libdump
