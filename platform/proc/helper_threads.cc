// The set*id wrappers: every glibc function that changes the credentials of
// all threads (its "setxid" broadcast), as the program calls it. Calls glibc
// makes internally (initgroups' setgroups) are not seen; they change no
// per-thread state the program set beforehand, so the broadcast agrees.
#include "platform/proc/helper_threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace libdump::proc {
namespace {

constexpr unsigned kMax = 8;
std::atomic<const HelperThread*> g_helpers[kMax];
std::atomic<unsigned> g_count{0};
// One credential change at a time: two threads stopping and starting the
// same helpers would race.
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;

template <typename Fn>
Fn Real(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

template <typename Fn, typename... Args>
int Call(Fn real, Args... args) {
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  HelpersStopped stopped;
  return real(args...);
}

}  // namespace

void RegisterHelperThread(const HelperThread* helper) {
  for (unsigned k = 0; k < kMax; ++k) {
    const HelperThread* expected = nullptr;
    if (g_helpers[k].load() == helper) return;
    if (g_helpers[k].compare_exchange_strong(expected, helper)) {
      g_count.fetch_add(1);
      return;
    }
  }
}

HelpersStopped::HelpersStopped() {
  if (g_count.load() == 0) return;
  pthread_mutex_lock(&g_mutex);
  for (unsigned k = 0; k < kMax; ++k) {
    const HelperThread* h = g_helpers[k].load();
    if (h != nullptr && h->stop()) stopped_ |= 1u << k;
  }
}

HelpersStopped::~HelpersStopped() {
  if (g_count.load() == 0) return;
  const int saved = errno;
  for (unsigned k = 0; k < kMax; ++k) {
    if ((stopped_ & (1u << k)) != 0) g_helpers[k].load()->start();
  }
  pthread_mutex_unlock(&g_mutex);
  errno = saved;
}

void BlockProgramSignals(sigset_t* old) {
  sigset_t set;
  sigemptyset(&set);
  for (int s = 1; s < SIGRTMIN; ++s) {
    if (s != SIGSEGV && s != SIGBUS && s != SIGFPE && s != SIGILL && s != SIGTRAP && s != SIGABRT && s != SIGSYS) {
      sigaddset(&set, s);
    }
  }
  pthread_sigmask(SIG_BLOCK, &set, old);
}

}  // namespace libdump::proc

#define LIBDUMP_SETXID(name, params, args)                                             \
  extern "C" __attribute__((visibility("default"))) int name params noexcept {         \
    using Fn = int(*) params;                                                          \
    static const Fn real = libdump::proc::Real<Fn>(#name);                             \
    return libdump::proc::Call args;                                                   \
  }

LIBDUMP_SETXID(setuid, (uid_t a), (real, a))
LIBDUMP_SETXID(setgid, (gid_t a), (real, a))
LIBDUMP_SETXID(seteuid, (uid_t a), (real, a))
LIBDUMP_SETXID(setegid, (gid_t a), (real, a))
LIBDUMP_SETXID(setreuid, (uid_t a, uid_t b), (real, a, b))
LIBDUMP_SETXID(setregid, (gid_t a, gid_t b), (real, a, b))
LIBDUMP_SETXID(setresuid, (uid_t a, uid_t b, uid_t c), (real, a, b, c))
LIBDUMP_SETXID(setresgid, (gid_t a, gid_t b, gid_t c), (real, a, b, c))
LIBDUMP_SETXID(setgroups, (size_t n, const gid_t* g), (real, n, g))
