// libdump's own threads (the heap dumper, the background release, the
// /debug/pprof server) and the program's credential changes.
//
// glibc changes the credentials of every thread when one calls setuid,
// setgid, setgroups and the like: it signals each thread, each makes the
// same system call, and glibc aborts the process when their results differ.
// The results differ when the threads' per-thread state differs, and the
// program controls that state only for the thread that makes the call:
// setpriv sets PR_SET_KEEPCAPS and its capabilities on its one thread, so a
// thread it never made loses CAP_SETGID at setresuid and fails the next
// setresgid with EPERM. libdump's threads therefore step aside: around each
// such call they end, and afterwards start again from the calling thread,
// with its credentials, capabilities and securebits, as a thread the
// program made at that moment would have them.
#pragma once

#include <signal.h>

namespace libdump::proc {

struct HelperThread {
  // Ends the thread (joined: gone from glibc's thread list) if it runs;
  // returns whether it ran.
  bool (*stop)();
  // Starts it again; called only when stop returned true.
  void (*start)();
};

// At most 8; the pointer must outlive the process. Async-signal-unsafe.
void RegisterHelperThread(const HelperThread* helper);

// What the set*id wrappers do around the real call; also for tests.
struct HelpersStopped {
  HelpersStopped();
  ~HelpersStopped();
  HelpersStopped(const HelpersStopped&) = delete;
  HelpersStopped& operator=(const HelpersStopped&) = delete;

 private:
  unsigned stopped_ = 0;  // bit k: helper k ran and is to start again
};

// Blocks, in the calling thread, the signals a thread libdump starts must not
// take (`old` gets the mask before), so a thread created before the caller
// restores `old` inherits it. Process-directed signals (SIGINT, SIGTERM,
// SIGCHLD, SIGUSR1, ...) must not land on a thread the program did not
// create, where its handler would run among libdump's frames or, with the
// program's threads blocking a signal for sigwait, be taken by the wrong
// thread. Faults stay deliverable, and so do real-time signals: heap dumps
// stop threads with one.
void BlockProgramSignals(sigset_t* old);

}  // namespace libdump::proc
