// fork() for processes whose libdump is libdump.so: glibc's fork, then, in
// the child, what cannot run among the fork's child handlers. Starting a
// thread allocates (its TLS), and a child handler may run before the
// allocator's or the heap profiler's have made their locks free again; once
// fork() returns, every handler has run. Only in libdump.so: the static
// libraries leave fork to the sanitizers, which intercept it themselves.
//
// Around glibc's fork, the loader's module-list lock is taken before any
// fork handler runs and handed to the child free (capture/loader_fork.h).
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "dump_on_signal.h"
#include "platform/capture/loader_fork.h"

// The loader's lock is looked for at load time, single-threaded, rather than
// at the first fork, which might come from inside a dl_iterate_phdr callback
// (where looking takes dl_load_lock under the list's lock).
__attribute__((constructor)) static void FindTheLoadersLock() { libdump::capture::InstallLoaderFork(); }

extern "C" __attribute__((visibility("default"))) pid_t fork() {
  using Fn = pid_t (*)();
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "fork"));
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  libdump::capture::LoaderForkPrepare();
  const pid_t pid = real();
  if (pid == 0) {
    libdump::capture::LoaderForkChild();  // done already by the first child handler
    libdump::heapdump::RestartDumperAfterFork();
  } else {
    libdump::capture::LoaderForkParent();
  }
  return pid;
}
