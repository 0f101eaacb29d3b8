// How a fork keeps the child free of the locks that module-list readers and
// unwinders hold, whatever the parent's threads were doing.
//
// Two kinds of lock matter. glibc's module-list lock (loader_lock.h) is taken
// by dl_iterate_phdr and by dlopen/dlclose from any thread, libdump's or the
// program's: the fork takes it itself, after every such reader has left and
// before any fork handler runs, and hands it to the child's thread, free.
// libunwind's own locks (its caches, taken around its dl_iterate_phdr) can
// be freed by nobody: libdump calls libunwind only inside a LoaderSection,
// which a fork waits for and which cannot start while a fork runs, and never
// in a forked child, whose stacks come from the unwind tables built before
// the fork (a stack that needs libunwind there stays truncated).
//
// The order of one fork (libdump.so's fork(), or the handlers below when the
// fork does not pass through it):
//   1. the gate closes; sections in progress end (new ones start no more);
//   2. the module-list lock is taken (readers and dlopen's list updates end);
//   3. glibc's fork: every pthread_atfork prepare handler (the profilers',
//      the allocator's), _Fork, then the parent or child handlers;
//   4. parent: the lock is released and the gate opens. Child: the lock is
//      given to the child's only thread and released, the gate opens, and
//      libunwind stays off in this process.
// Step 2 comes before every prepare handler so that a dl_iterate_phdr
// callback that allocates (the allocator's and the heap profiler's locks are
// taken in step 3) always finishes; in exchange, no lock a prepare handler
// takes may be held across dl_iterate_phdr, dlopen or dlclose (libdump's
// profilers refresh their unwind tables before taking theirs).
#pragma once

namespace libdump::capture {

class LoaderSection {
 public:
  enum Mode {
    kWait,  // for readers of the module list that must run: waits for a fork to end
    kTry,   // for libunwind: not entered while a fork runs, nor in a forked child
  };
  explicit LoaderSection(Mode mode = kWait);
  ~LoaderSection();
  LoaderSection(const LoaderSection&) = delete;
  LoaderSection& operator=(const LoaderSection&) = delete;
  // Whether the caller may go on (always for kWait).
  bool entered() const { return entered_; }

 private:
  bool entered_ = false;
  bool nested_ = false;   // counted in this thread's depth
  bool counted_ = false;  // counted in the sections a fork waits for
};

// Steps 1-2, 4 of a fork: libdump.so's fork() calls them around glibc's.
// Each is idempotent within one fork (the handlers call them too, for forks
// that bypass fork(): glibc's daemon(), a preload without libdump.so), and
// Parent preserves errno.
void LoaderForkPrepare();
void LoaderForkParent();
void LoaderForkChild();

// Registers the handlers above with pthread_atfork, once. pthread_atfork
// allocates: not from inside an allocation. The earlier it is registered, the
// earlier its child handler runs (before any other that might read the
// module list): libdump's allocator registers it before its own.
void InstallLoaderGate();

}  // namespace libdump::capture

// For the allocator, which does not link libdump::capture: a weak reference
// to this registers the handlers where the allocator registers its own.
extern "C" void libdump_install_loader_gate();
