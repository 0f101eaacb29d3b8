// glibc's lock over the loader's list of modules (dl_load_write_lock): taken
// by dl_iterate_phdr (libunwind's local unwinding, libdump's module
// listings, a program's own readers) and by dlopen and dlclose while they
// link or unlink a module. No glibc release frees or re-initialises it in
// the child of fork (2.36 re-initialises dl_load_lock and dl_load_tls_lock
// only): a child forked while another thread held it waits forever at its
// first reader or dlopen. A fork that holds it itself (loader_fork.h) leaves
// the list whole and the lock free in the child.
#pragma once

#include <pthread.h>

namespace libdump::capture {

// The lock, found once by looking at which recursive mutex in the loader's
// state a dl_iterate_phdr callback holds (its layout changes between glibc
// releases; its behaviour does not). Null when no single such mutex is
// found (another libc, a glibc that changed it): forks then do not hold it.
// The first call takes the loader's locks (dlopen, dlsym, dl_iterate_phdr):
// never from inside a dl_iterate_phdr callback (a dlopen of another thread,
// holding dl_load_lock, may be waiting for the list) nor a fork's handlers.
pthread_mutex_t* LoaderWriteLock();

// LoaderWriteLock's answer if it has been looked for, else null: never
// looks (safe inside an allocation or a callback).
pthread_mutex_t* LoaderWriteLockIfFound();

// libc's pthread_mutex_lock and _unlock on it, past any interposer: for the
// lock LoaderWriteLock returned.
bool LockLoader(pthread_mutex_t* m);
void UnlockLoader(pthread_mutex_t* m);

// Runs fn(arg) with the module-list lock held (inside a dl_iterate_phdr
// callback, so with any libc): no module can be unlinked, hence unmapped,
// meanwhile. fn may allocate and read the list again, but not take
// dl_load_lock (dlopen, dlclose, dlsym, dladdr, LoaderWriteLock's first
// call): a dlopen or dlclose of another thread holds it and waits for the
// list. Nor may it wait for another thread that may need the list.
void WithModuleListHeld(void (*fn)(void*), void* arg);

}  // namespace libdump::capture
