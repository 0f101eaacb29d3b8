// How a fork leaves the child free of the locks that readers of the module
// list and unwinders hold, whatever the parent's threads were doing.
//
// glibc's module-list lock (loader_lock.h) is taken by dl_iterate_phdr and
// by dlopen/dlclose from any thread, libdump's or the program's: a fork takes
// it itself before any fork handler runs, so that every reader and list
// update in progress ends first and none is inside at _Fork, and hands it to
// the child's thread, free. libunwind's own locks (its caches, taken around
// its dl_iterate_phdr) can be freed by nobody: libdump does not call
// libunwind in a forked child (a program's own libunwind call, in a thread
// the child lacks, may have held them), nor in the forking thread while its
// fork runs; stacks there come from the unwind tables built before the fork.
//
// The order of one fork (libdump.so's fork(), or the handlers below when the
// fork does not pass through it):
//   1. the module-list lock is taken (recursive: a fork from inside a
//      dl_iterate_phdr callback holds it already);
//   2. glibc's fork: every pthread_atfork prepare handler (the profilers',
//      the allocator's last), _Fork, then the parent or child handlers;
//   3. parent: the lock is released. Child: the lock, held by the forking
//      thread under its parent's thread id, is given to the child's thread
//      and released, and libunwind stays off in this process.
// Step 1 comes before every prepare handler so that a dl_iterate_phdr
// callback that allocates (the allocator's locks are taken in step 2) always
// finishes; in exchange, no lock a prepare handler takes may be held across
// dl_iterate_phdr, dlopen or dlclose (libdump's profilers refresh their
// unwind tables before taking theirs).
#pragma once

namespace libdump::capture {

// Steps 1 and 3: libdump.so's fork() calls them around glibc's. Each is
// idempotent within one fork (the handlers call them too, for forks that
// bypass fork(): glibc's daemon(), a preload without libdump.so); Parent
// preserves errno.
void LoaderForkPrepare();
void LoaderForkParent();
void LoaderForkChild();

// Around libdump's own first opening of a library (libunwind's remote
// library, zstd), static initialisation included: a fork waits for one in
// progress (before step 1), so no child inherits a half-done open, whose
// guard would keep the child's own dumps waiting forever. Nothing inside may
// wait for a fork.
class LibraryOpenSection {
 public:
  LibraryOpenSection();
  ~LibraryOpenSection();
  LibraryOpenSection(const LibraryOpenSection&) = delete;
  LibraryOpenSection& operator=(const LibraryOpenSection&) = delete;
};

// Whether this thread may call libunwind's local unwinder now: not in a
// forked child, nor in a thread between steps 1 and 3 of its own fork, nor
// in one that holds the module-list lock (inside a dl_iterate_phdr callback:
// libunwind takes its own lock before that one).
bool UnwinderUsable();

// Registers the handlers above with pthread_atfork, once, and looks for the
// lock (where the loader's lock is not held: not from inside an allocation
// or a dl_iterate_phdr callback). The earlier the handlers are registered,
// the earlier the child handler runs (before any other that might read the
// module list): libdump's allocator registers them before its own
// (libdump_install_loader_fork below).
void InstallLoaderFork();

}  // namespace libdump::capture

// For the allocator, which does not link libdump::capture: a weak reference
// to this registers the handlers (only: pthread_atfork allocates, and the
// lock is looked for later) where the allocator registers its own.
extern "C" void libdump_install_loader_fork();
