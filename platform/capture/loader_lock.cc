#include "platform/capture/loader_lock.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace libdump::capture {
namespace {

// At most this many candidates are looked at; more means the probe is lost.
constexpr int kMaxCandidates = 4;

struct Probe {
  uintptr_t lo = 0, hi = 0;  // the loader's state (_rtld_global)
  pid_t tid = 0;
  uintptr_t found[kMaxCandidates] = {};
  unsigned count[kMaxCandidates] = {};
  int n = 0;
  bool nested_ok = false;
};

const pthread_mutex_t* At(uintptr_t a) { return reinterpret_cast<const pthread_mutex_t*>(a); }

bool HeldByMe(const pthread_mutex_t* m, pid_t tid) {
  // glibc's layout of pthread_mutex_t is public (bits/struct_mutex.h).
  return m->__data.__lock != 0 && m->__data.__owner == tid && m->__data.__count >= 1 &&
         (m->__data.__kind & 3) == PTHREAD_MUTEX_RECURSIVE_NP;
}

int Nested(dl_phdr_info*, size_t, void* arg) {
  auto* p = static_cast<Probe*>(arg);
  // One level deeper: the lock dl_iterate_phdr takes counts one more.
  p->nested_ok = p->n == 1 && HeldByMe(At(p->found[0]), p->tid) && At(p->found[0])->__data.__count == p->count[0] + 1;
  return 1;
}

int Outer(dl_phdr_info*, size_t, void* arg) {
  auto* p = static_cast<Probe*>(arg);
  for (uintptr_t a = (p->lo + 7) & ~uintptr_t{7}; a + sizeof(pthread_mutex_t) <= p->hi; a += 8) {
    if (!HeldByMe(At(a), p->tid)) continue;
    if (p->n < kMaxCandidates) {
      p->found[p->n] = a;
      p->count[p->n] = At(a)->__data.__count;
    }
    ++p->n;
  }
  if (p->n == 1) dl_iterate_phdr(Nested, p);
  return 1;
}

// Find's answer when it cannot tell yet.
pthread_mutex_t* const kLater = reinterpret_cast<pthread_mutex_t*>(uintptr_t{1});

using MutexFn = int (*)(pthread_mutex_t*);
MutexFn g_lock_fn = nullptr, g_unlock_fn = nullptr;

pthread_mutex_t* Find() {
  // libc's own, looked up in libc's scope: pthread_mutex_lock may be
  // interposed (the mutex profiler), and its hooks must not run with the
  // loader's lock held.
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc == nullptr) return nullptr;
  g_lock_fn = reinterpret_cast<MutexFn>(dlsym(libc, "pthread_mutex_lock"));
  g_unlock_fn = reinterpret_cast<MutexFn>(dlsym(libc, "pthread_mutex_unlock"));
  dlclose(libc);
  if (g_lock_fn == nullptr || g_unlock_fn == nullptr) return nullptr;
  void* state = dlsym(RTLD_DEFAULT, "_rtld_global");
  if (state == nullptr) return nullptr;
  Dl_info info;
  void* extra = nullptr;
  if (dladdr1(state, &info, &extra, RTLD_DL_SYMENT) == 0 || extra == nullptr) return nullptr;
  const auto* sym = static_cast<const ElfW(Sym)*>(extra);
  if (sym->st_size < sizeof(pthread_mutex_t)) return nullptr;
  Probe p;
  p.lo = reinterpret_cast<uintptr_t>(state);
  p.hi = p.lo + sym->st_size;
  p.tid = static_cast<pid_t>(syscall(SYS_gettid));
  // Mutexes this thread held already (dl_load_lock inside a dlopen) are
  // held outside the callback too, and would be two candidates inside it.
  dl_iterate_phdr(Outer, &p);
  // Called inside a callback (or a dlopen), this thread holds candidates
  // outside the walk too: no answer now, a later call looks again.
  for (int i = 0; i < p.n && i < kMaxCandidates; ++i) {
    if (At(p.found[i])->__data.__owner == p.tid) return kLater;
  }
  if (p.n != 1 || !p.nested_ok) return nullptr;
  return reinterpret_cast<pthread_mutex_t*>(p.found[0]);
}

// 0: not looked for yet; 1: not found; else the lock.
std::atomic<uintptr_t> g_lock{0};

}  // namespace

pthread_mutex_t* LoaderWriteLock() {
  uintptr_t v = g_lock.load(std::memory_order_acquire);
  if (v == 0) {
    // Two threads may both look: they find the same answer.
    pthread_mutex_t* m = Find();
    if (m == kLater) return nullptr;
    v = m != nullptr ? reinterpret_cast<uintptr_t>(m) : 1;
    g_lock.store(v, std::memory_order_release);
  }
  return v == 1 ? nullptr : reinterpret_cast<pthread_mutex_t*>(v);
}

void WithModuleListHeld(void (*fn)(void*), void* arg) {
  struct Call {
    void (*fn)(void*);
    void* arg;
    bool done;
  } call{fn, arg, false};
  dl_iterate_phdr(
      [](dl_phdr_info*, size_t, void* c) {
        auto* x = static_cast<Call*>(c);
        x->fn(x->arg);
        x->done = true;
        return 1;
      },
      &call);
  if (!call.done) fn(arg);  // a loader that lists no module
}

pthread_mutex_t* LoaderWriteLockIfFound() {
  const uintptr_t v = g_lock.load(std::memory_order_acquire);
  return v <= 1 ? nullptr : reinterpret_cast<pthread_mutex_t*>(v);
}

bool LockLoader(pthread_mutex_t* m) { return g_lock_fn(m) == 0; }
void UnlockLoader(pthread_mutex_t* m) { g_unlock_fn(m); }

}  // namespace libdump::capture
