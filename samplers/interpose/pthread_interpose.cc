// pthread interposition for the block and mutex profiles: mutex lock,
// rwlock read/write lock, condition variable wait/timedwait/clockwait,
// semaphore wait/timedwait/clockwait, barrier wait and join, with their
// timed variants. That covers std::mutex, std::shared_mutex,
// std::condition_variable and std::thread::join (libstdc++ calls these
// through the PLT). Linked whole into libdump.so and libdumpprof.so
// (LD_PRELOAD), and into a program that links libdump::pthread_interpose.
//
// With both profiles off a call costs one relaxed load and a branch on top
// of glibc's (and the load of glibc's address, which the call needs). With one on, a lock is first tried: an uncontended one is
// never timed. Only a wait that really blocked reads the clock twice and
// goes to the profilers, which sample it.
//
// glibc's own functions are found by dlvsym(RTLD_NEXT) at the version a
// program links against today (dlsym would return the 2.2.5
// pthread_cond_wait, made for another condition variable layout), all of
// them when the library is loaded (dlvsym takes the loader's lock, which a
// thread in dlopen may hold while it waits for the allocator), and on first
// use for a lock taken by another library's constructor before ours runs.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include <atomic>

#include "samplers/interpose/wait_state.h"

namespace libdump::samplers {
namespace {

// One wait: started after a failed try (or for calls that always wait),
// ended when the call returns.
class Wait {
 public:
  Wait(const void* obj, bool is_lock) : obj_(obj), flags_(g_wait_profiling.load(std::memory_order_relaxed)) {
    t_wait.in_profiler = true;
    // The clock only for the block profile or the flight recorder's waits, or
    // for a sampled mutex wait: a read costs ~28 ns here (kvm-clock), on every
    // contended acquisition.
    t0_ = (flags_ & (kBlockProfiling | kFlightWaits)) != 0 ? WaitClockNs() : 0;
    mutex_sampled_ = is_lock && (flags_ & kMutexProfiling) != 0 && MutexWaitBegin(obj, &t0_);
    t_wait.in_profiler = false;
  }
  ~Wait() {
    const int saved = errno;
    t_wait.in_profiler = true;
    const bool block = (flags_ & (kBlockProfiling | kFlightWaits)) != 0;
    const int64_t t1 = block || mutex_sampled_ ? WaitClockNs() : 0;
    if (mutex_sampled_) MutexWaitEnd(obj_, t0_, t1);
    if (block) RecordBlockEvent(t0_, t1);
    t_wait.in_profiler = false;
    errno = saved;
  }

 private:
  const void* obj_;
  int flags_;
  int64_t t0_;
  bool mutex_sampled_;
};

// Whether a call is to be profiled: cheap check first.
inline bool Profiled() {
  return __builtin_expect(g_wait_profiling.load(std::memory_order_relaxed) != 0, 0) && !t_wait.in_profiler;
}

// Out of line, so that its frame (cut from profiles by its namespace)
// rather than an inlined copy sits above the caller's.
__attribute__((noinline)) void ReleaseSlow(const void* lock) {
  if (t_wait.in_profiler || !MutexMayHaveWaiters(lock)) return;
  t_wait.in_profiler = true;
  MutexRelease(lock);
  t_wait.in_profiler = false;
}

// Before lock is released: charge its sampled waiters to this stack. A
// macro, not an inline function: the call's return address must map to the
// interposed function itself, not to an inlined frame named for this.
#define LIBDUMP_BEFORE_RELEASE(lock)                                                                          \
  do {                                                                                                        \
    if (__builtin_expect((libdump::samplers::g_wait_profiling.load(std::memory_order_relaxed) &               \
                          libdump::samplers::kMutexProfiling) != 0, 0)) {                                     \
      libdump::samplers::ReleaseSlow(lock);                                                                   \
    }                                                                                                         \
  } while (0)

// The functions interposed here, each with the glibc version programs link
// against today.
#define LIBDUMP_INTERPOSED(X) \
  X(pthread_mutex_lock, "GLIBC_2.2.5") \
  X(pthread_mutex_timedlock, "GLIBC_2.34") \
  X(pthread_mutex_clocklock, "GLIBC_2.34") \
  X(pthread_mutex_unlock, "GLIBC_2.2.5") \
  X(pthread_rwlock_rdlock, "GLIBC_2.34") \
  X(pthread_rwlock_wrlock, "GLIBC_2.34") \
  X(pthread_rwlock_timedrdlock, "GLIBC_2.34") \
  X(pthread_rwlock_timedwrlock, "GLIBC_2.34") \
  X(pthread_rwlock_clockrdlock, "GLIBC_2.34") \
  X(pthread_rwlock_clockwrlock, "GLIBC_2.34") \
  X(pthread_rwlock_unlock, "GLIBC_2.34") \
  X(pthread_cond_wait, "GLIBC_2.3.2") \
  X(pthread_cond_timedwait, "GLIBC_2.3.2") \
  X(pthread_cond_clockwait, "GLIBC_2.34") \
  X(sem_wait, "GLIBC_2.34") \
  X(sem_timedwait, "GLIBC_2.34") \
  X(sem_clockwait, "GLIBC_2.34") \
  X(pthread_barrier_wait, "GLIBC_2.34") \
  X(pthread_join, "GLIBC_2.34") \
  X(pthread_timedjoin_np, "GLIBC_2.34") \
  X(pthread_clockjoin_np, "GLIBC_2.34")

enum RealId {
#define LIBDUMP_ID(name, version) kReal_##name,
  LIBDUMP_INTERPOSED(LIBDUMP_ID)
#undef LIBDUMP_ID
  kRealCount
};
struct RealName {
  const char* name;
  const char* version;
};
constexpr RealName kRealNames[kRealCount] = {
#define LIBDUMP_NAME(name, version) {#name, version},
    LIBDUMP_INTERPOSED(LIBDUMP_NAME)
#undef LIBDUMP_NAME
};
std::atomic<void*> g_real[kRealCount];

// glibc's function at its version, or the default one. Out of line and
// cold: every call after the library's constructor only loads the address.
__attribute__((noinline, cold)) void* Resolve(RealId id) {
  void* f = dlvsym(RTLD_NEXT, kRealNames[id].name, kRealNames[id].version);
  if (f == nullptr) f = dlsym(RTLD_NEXT, kRealNames[id].name);
  g_real[id].store(f, std::memory_order_relaxed);
  return f;
}

template <typename Fn>
__attribute__((always_inline)) inline Fn Real(RealId id) {
  void* f = g_real[id].load(std::memory_order_relaxed);
  if (__builtin_expect(f == nullptr, 0)) f = Resolve(id);
  return reinterpret_cast<Fn>(f);
}

// Every address is resolved when the library is loaded: before main for a
// preload, or inside dlopen, whose loader lock is recursive and already
// held. Resolved on first use instead, the first pthread_mutex_unlock of
// fork's parent handlers (the loader-lock hand-over) called dlvsym with the
// allocator's locks held, and waited for the loader's lock that a thread in
// dlopen held while it waited for the allocator: the process hung in its
// first fork (tests/heapdump/fork_dump_stress.sh, under load). A call made
// before this constructor (another library's constructor) still resolves
// on first use.
__attribute__((constructor(101))) void ResolveAll() {
  for (int id = 0; id < kRealCount; ++id) {
    if (g_real[id].load(std::memory_order_relaxed) == nullptr) Resolve(static_cast<RealId>(id));
  }
}

#define LIBDUMP_REAL(name, type) const auto real = Real<type>(libdump::samplers::kReal_##name)

// A contended lock: try first, time only a wait.
template <typename TryFn, typename LockFn>
__attribute__((noinline)) int ProfiledLock(const void* obj, TryFn try_lock, LockFn lock) {
  const int rc = try_lock();
  if (rc != EBUSY) return rc;
  Wait w(obj, true);
  return lock();
}

template <typename CallFn>
__attribute__((noinline)) int ProfiledWait(const void* obj, CallFn call) {
  Wait w(obj, false);
  return call();
}

}  // namespace
}  // namespace libdump::samplers

using libdump::samplers::Profiled;
using libdump::samplers::ProfiledLock;
using libdump::samplers::ProfiledWait;
using libdump::samplers::Real;

extern "C" {

int pthread_mutex_lock(pthread_mutex_t* m) {
  using Fn = int (*)(pthread_mutex_t*);
  LIBDUMP_REAL(pthread_mutex_lock, Fn);
  if (!Profiled()) return real(m);
  return ProfiledLock(
      m, [m] { return pthread_mutex_trylock(m); }, [=] { return real(m); });
}

int pthread_mutex_timedlock(pthread_mutex_t* m, const timespec* abstime) {
  using Fn = int (*)(pthread_mutex_t*, const timespec*);
  LIBDUMP_REAL(pthread_mutex_timedlock, Fn);
  if (!Profiled()) return real(m, abstime);
  return ProfiledLock(
      m, [m] { return pthread_mutex_trylock(m); }, [=] { return real(m, abstime); });
}

int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime) {
  using Fn = int (*)(pthread_mutex_t*, clockid_t, const timespec*);
  LIBDUMP_REAL(pthread_mutex_clocklock, Fn);
  if (!Profiled()) return real(m, clock, abstime);
  return ProfiledLock(
      m, [m] { return pthread_mutex_trylock(m); }, [=] { return real(m, clock, abstime); });
}

int pthread_mutex_unlock(pthread_mutex_t* m) {
  using Fn = int (*)(pthread_mutex_t*);
  LIBDUMP_REAL(pthread_mutex_unlock, Fn);
  LIBDUMP_BEFORE_RELEASE(m);
  return real(m);
}

int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
  using Fn = int (*)(pthread_rwlock_t*);
  LIBDUMP_REAL(pthread_rwlock_rdlock, Fn);
  if (!Profiled()) return real(l);
  return ProfiledLock(
      l, [l] { return pthread_rwlock_tryrdlock(l); }, [=] { return real(l); });
}

int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
  using Fn = int (*)(pthread_rwlock_t*);
  LIBDUMP_REAL(pthread_rwlock_wrlock, Fn);
  if (!Profiled()) return real(l);
  return ProfiledLock(
      l, [l] { return pthread_rwlock_trywrlock(l); }, [=] { return real(l); });
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const timespec* abstime) {
  using Fn = int (*)(pthread_rwlock_t*, const timespec*);
  LIBDUMP_REAL(pthread_rwlock_timedrdlock, Fn);
  if (!Profiled()) return real(l, abstime);
  return ProfiledLock(
      l, [l] { return pthread_rwlock_tryrdlock(l); }, [=] { return real(l, abstime); });
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const timespec* abstime) {
  using Fn = int (*)(pthread_rwlock_t*, const timespec*);
  LIBDUMP_REAL(pthread_rwlock_timedwrlock, Fn);
  if (!Profiled()) return real(l, abstime);
  return ProfiledLock(
      l, [l] { return pthread_rwlock_trywrlock(l); }, [=] { return real(l, abstime); });
}

int pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) {
  using Fn = int (*)(pthread_rwlock_t*, clockid_t, const timespec*);
  LIBDUMP_REAL(pthread_rwlock_clockrdlock, Fn);
  if (!Profiled()) return real(l, clock, abstime);
  return ProfiledLock(
      l, [l] { return pthread_rwlock_tryrdlock(l); }, [=] { return real(l, clock, abstime); });
}

int pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) {
  using Fn = int (*)(pthread_rwlock_t*, clockid_t, const timespec*);
  LIBDUMP_REAL(pthread_rwlock_clockwrlock, Fn);
  if (!Profiled()) return real(l, clock, abstime);
  return ProfiledLock(
      l, [l] { return pthread_rwlock_trywrlock(l); }, [=] { return real(l, clock, abstime); });
}

int pthread_rwlock_unlock(pthread_rwlock_t* l) {
  using Fn = int (*)(pthread_rwlock_t*);
  LIBDUMP_REAL(pthread_rwlock_unlock, Fn);
  LIBDUMP_BEFORE_RELEASE(l);
  return real(l);
}

// A condition variable wait releases the mutex inside glibc: its sampled
// waiters are charged to the waiting stack first, as a release.
int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
  using Fn = int (*)(pthread_cond_t*, pthread_mutex_t*);
  LIBDUMP_REAL(pthread_cond_wait, Fn);
  if (!Profiled()) return real(c, m);
  LIBDUMP_BEFORE_RELEASE(m);
  return ProfiledWait(c, [=] { return real(c, m); });
}

int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m, const timespec* abstime) {
  using Fn = int (*)(pthread_cond_t*, pthread_mutex_t*, const timespec*);
  LIBDUMP_REAL(pthread_cond_timedwait, Fn);
  if (!Profiled()) return real(c, m, abstime);
  LIBDUMP_BEFORE_RELEASE(m);
  return ProfiledWait(c, [=] { return real(c, m, abstime); });
}

int pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const timespec* abstime) {
  using Fn = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
  LIBDUMP_REAL(pthread_cond_clockwait, Fn);
  if (!Profiled()) return real(c, m, clock, abstime);
  LIBDUMP_BEFORE_RELEASE(m);
  return ProfiledWait(c, [=] { return real(c, m, clock, abstime); });
}

// sem_trywait fails with errno EAGAIN: errno is restored for the real call.
int sem_wait(sem_t* s) {
  using Fn = int (*)(sem_t*);
  LIBDUMP_REAL(sem_wait, Fn);
  if (!Profiled()) return real(s);
  const int saved = errno;
  if (sem_trywait(s) == 0) return 0;
  errno = saved;
  return ProfiledWait(s, [=] { return real(s); });
}

int sem_timedwait(sem_t* s, const timespec* abstime) {
  using Fn = int (*)(sem_t*, const timespec*);
  LIBDUMP_REAL(sem_timedwait, Fn);
  if (!Profiled()) return real(s, abstime);
  const int saved = errno;
  if (sem_trywait(s) == 0) return 0;
  errno = saved;
  return ProfiledWait(s, [=] { return real(s, abstime); });
}

int sem_clockwait(sem_t* s, clockid_t clock, const timespec* abstime) {
  using Fn = int (*)(sem_t*, clockid_t, const timespec*);
  LIBDUMP_REAL(sem_clockwait, Fn);
  if (!Profiled()) return real(s, clock, abstime);
  const int saved = errno;
  if (sem_trywait(s) == 0) return 0;
  errno = saved;
  return ProfiledWait(s, [=] { return real(s, clock, abstime); });
}

int pthread_barrier_wait(pthread_barrier_t* b) {
  using Fn = int (*)(pthread_barrier_t*);
  LIBDUMP_REAL(pthread_barrier_wait, Fn);
  if (!Profiled()) return real(b);
  return ProfiledWait(b, [=] { return real(b); });
}

int pthread_join(pthread_t t, void** ret) {
  using Fn = int (*)(pthread_t, void**);
  LIBDUMP_REAL(pthread_join, Fn);
  if (!Profiled()) return real(t, ret);
  return ProfiledWait(reinterpret_cast<const void*>(t), [=] { return real(t, ret); });
}

int pthread_timedjoin_np(pthread_t t, void** ret, const timespec* abstime) {
  using Fn = int (*)(pthread_t, void**, const timespec*);
  LIBDUMP_REAL(pthread_timedjoin_np, Fn);
  if (!Profiled()) return real(t, ret, abstime);
  return ProfiledWait(reinterpret_cast<const void*>(t), [=] { return real(t, ret, abstime); });
}

int pthread_clockjoin_np(pthread_t t, void** ret, clockid_t clock, const timespec* abstime) {
  using Fn = int (*)(pthread_t, void**, clockid_t, const timespec*);
  LIBDUMP_REAL(pthread_clockjoin_np, Fn);
  if (!Profiled()) return real(t, ret, clock, abstime);
  return ProfiledWait(reinterpret_cast<const void*>(t), [=] { return real(t, ret, clock, abstime); });
}

}  // extern "C"

namespace libdump {
bool WaitsInterposed() { return true; }
}  // namespace libdump
