#include "platform/capture/loader_fork.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "platform/capture/loader_lock.h"

namespace libdump::capture {

namespace {

// Set in a forked child (and inherited by its children).
std::atomic<bool> g_forked_child{false};

// initial-exec: UnwinderUsable runs inside the allocator (a heap sample),
// where the general model's __tls_get_addr could allocate.
#define LIBDUMP_TLS thread_local __attribute__((tls_model("initial-exec")))
LIBDUMP_TLS bool t_forking = false;             // between steps 1 and 3
LIBDUMP_TLS pid_t t_fork_tid = 0;               // this thread's id in the parent
LIBDUMP_TLS pthread_mutex_t* t_held = nullptr;  // the module-list lock, taken in step 1
LIBDUMP_TLS pid_t t_tid = 0;                    // for UnwinderUsable; stale only in a forked child

// LibraryOpenSection's. A fork takes it before the loader's lock, as an
// opening thread does (dlopen takes the loader's lock inside).
pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
LIBDUMP_TLS bool t_open_held = false;  // by this thread's fork

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void Register() {
  static std::atomic<bool> registered{false};
  if (registered.exchange(true, std::memory_order_acq_rel)) return;
  pthread_atfork(LoaderForkPrepare, LoaderForkParent, LoaderForkChild);
}

}  // namespace

void LoaderForkPrepare() {
  if (t_forking) return;
  // Looked for before the lock is taken: the search reads the module list.
  pthread_mutex_t* lock = LoaderWriteLock();
  t_forking = true;
  t_fork_tid = Tid();
  t_open_held = pthread_mutex_lock(&g_open_mu) == 0;
  if (lock != nullptr && LockLoader(lock)) t_held = lock;
}

void LoaderForkParent() {
  if (!t_forking) return;
  const int saved = errno;
  if (t_held != nullptr) UnlockLoader(t_held);
  t_held = nullptr;
  if (t_open_held) pthread_mutex_unlock(&g_open_mu);
  t_open_held = false;
  t_forking = false;
  errno = saved;
}

void LoaderForkChild() {
  if (!t_forking) return;
  if (pthread_mutex_t* m = t_held) {
    // glibc's pthread_mutex_t layout is public (bits/struct_mutex.h). The
    // child's thread owns the lock now, at the depth this thread held it,
    // and gives back the fork's hold. A glibc that made the lock anew in
    // the child left an owner of 0: nothing to give back then.
    const pid_t self = Tid();
    if (m->__data.__owner == t_fork_tid) m->__data.__owner = self;
    if (m->__data.__owner == self) UnlockLoader(m);
  }
  t_held = nullptr;
  static const pthread_mutex_t kFree = PTHREAD_MUTEX_INITIALIZER;
  g_open_mu = kFree;  // this thread's hold; no other thread is in the child
  t_open_held = false;
  t_forking = false;
  g_forked_child.store(true, std::memory_order_relaxed);
}

LibraryOpenSection::LibraryOpenSection() { pthread_mutex_lock(&g_open_mu); }
LibraryOpenSection::~LibraryOpenSection() { pthread_mutex_unlock(&g_open_mu); }

bool UnwinderUsable() {
  if (t_forking || g_forked_child.load(std::memory_order_relaxed)) return false;
  // A thread inside a dl_iterate_phdr callback (a program's that allocates,
  // a dump's preparation) holds the module-list lock, and libunwind takes
  // its cache lock before that one: a thread in libunwind waiting for the
  // list would wait for this one, and this one for it.
  if (pthread_mutex_t* m = LoaderWriteLockIfFound()) {
    if (t_tid == 0) t_tid = Tid();
    if (m->__data.__owner == t_tid) return false;
  }
  return true;
}

void InstallLoaderFork() {
  Register();
  // Looked for now rather than at the first fork, which may come from inside
  // a dl_iterate_phdr callback (where the search cannot tell).
  LoaderWriteLock();
}

}  // namespace libdump::capture

extern "C" __attribute__((visibility("default"))) void libdump_install_loader_fork() {
  libdump::capture::Register();
}
