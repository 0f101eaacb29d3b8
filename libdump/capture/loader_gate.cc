#include "loader_gate.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "loader_lock.h"

namespace libdump::capture {

namespace {

// Atomics and sched_yield, not a lock: a section is entered from a sampled
// allocation anywhere, and a fork waits only for sections already inside
// (one libunwind walk or one module listing each).
std::atomic<int> g_inside{0};
std::atomic<bool> g_closed{false};
// Set in a forked child: libunwind's locks may be held by a thread it lacks.
std::atomic<bool> g_forked_child{false};
pid_t g_fork_tid = 0;  // the forking thread's id in the parent

thread_local int t_depth = 0;      // sections nest: a sampled allocation inside a listing
thread_local bool t_counted = false;  // the outermost section of this thread is in g_inside
thread_local bool t_forking = false;  // this thread is between steps 1 and 4
thread_local pthread_mutex_t* t_held = nullptr;  // the module-list lock, taken in step 2

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

}  // namespace

LoaderSection::LoaderSection(Mode mode) {
  if (mode == kTry && g_forked_child.load(std::memory_order_relaxed)) return;
  if (t_forking) {
    // The forking thread's own: it holds the module-list lock already
    // (recursive), but libunwind's locks may be held by a thread that waits
    // for that lock.
    entered_ = mode == kWait;
    return;
  }
  entered_ = true;
  nested_ = true;
  if (t_depth++ > 0) return;
  for (;;) {
    g_inside.fetch_add(1, std::memory_order_seq_cst);
    if (!g_closed.load(std::memory_order_seq_cst)) {
      counted_ = t_counted = true;
      return;
    }
    g_inside.fetch_sub(1, std::memory_order_seq_cst);
    if (mode == kTry) {
      --t_depth;
      nested_ = entered_ = false;
      return;
    }
    while (g_closed.load(std::memory_order_acquire)) sched_yield();
  }
}

LoaderSection::~LoaderSection() {
  if (!nested_ || --t_depth > 0) return;
  if (counted_) {
    t_counted = false;
    g_inside.fetch_sub(1, std::memory_order_release);
  }
}

void LoaderForkPrepare() {
  if (t_forking) return;
  // Found before the gate closes: the search itself reads the module list.
  pthread_mutex_t* lock = LoaderWriteLock();
  t_forking = true;
  g_fork_tid = Tid();
  // 1. A fork from inside a section (a dl_iterate_phdr callback that forks)
  //    waits for every section but its own.
  const int own = t_counted ? 1 : 0;
  g_closed.store(true, std::memory_order_seq_cst);
  while (g_inside.load(std::memory_order_seq_cst) != own) sched_yield();
  // 2. Recursive: a fork from inside a callback already holds it.
  if (lock != nullptr && LockLoader(lock)) t_held = lock;
}

void LoaderForkParent() {
  if (!t_forking) return;
  const int saved = errno;
  if (t_held != nullptr) UnlockLoader(t_held);
  t_held = nullptr;
  t_forking = false;
  g_closed.store(false, std::memory_order_release);
  errno = saved;
}

void LoaderForkChild() {
  if (!t_forking) return;
  if (pthread_mutex_t* m = t_held) {
    // Taken in the parent by this thread under its old id: the child's
    // thread owns it now (at the depth it had), and gives back the fork's hold.
    const pid_t self = Tid();
    if (m->__data.__owner == g_fork_tid) m->__data.__owner = self;
    if (m->__data.__owner == self) UnlockLoader(m);
  }
  t_held = nullptr;
  t_forking = false;
  // The child has one thread, this one: only its own section can be inside.
  g_inside.store(t_counted ? 1 : 0, std::memory_order_relaxed);
  g_forked_child.store(true, std::memory_order_relaxed);
  g_closed.store(false, std::memory_order_release);
}

namespace {
void Register() {
  static std::atomic<bool> registered{false};
  if (registered.exchange(true, std::memory_order_acq_rel)) return;
  pthread_atfork(LoaderForkPrepare, LoaderForkParent, LoaderForkChild);
}
}  // namespace

void InstallLoaderGate() {
  Register();
  // Found now, where the loader's lock is not held, rather than at the
  // first fork, which may come from inside a dl_iterate_phdr callback.
  LoaderWriteLock();
}

}  // namespace libdump::capture

// From inside the allocator at its first allocation: registers only (the
// search for the lock calls into the loader).
extern "C" __attribute__((visibility("default"))) void libdump_install_loader_gate() {
  libdump::capture::Register();
}
