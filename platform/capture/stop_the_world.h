// Stops every other thread of the process with a signal and captures its
// registers, so a dump sees memory that does not change under it.
//
// Each stopped thread waits inside the signal handler on a futex until
// Resume(). Nothing here allocates or takes a user-space lock once Stop()
// starts: slots live in memory the caller mapped beforehand.
#pragma once

#include <sys/types.h>
#include <ucontext.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace libdump::capture {

enum class StopState : int {
  kSignalled = 0,  // signal sent, no answer yet
  kStopped = 1,    // waiting in the handler; regs are valid
  kGone = 2,       // exited before it could stop
  kUnresponsive = 3,  // did not answer in time (signal blocked, stuck in the kernel)
};

struct ThreadSlot {
  pid_t tid = 0;
  std::atomic<int> state{0};
  greg_t regs[NGREG];            // the interrupted context
  uint64_t regs_addr = 0;        // where the kernel saved them on the thread's own stack
  uint64_t thread_pointer = 0;   // %fs base: the thread's TLS
  char name[16] = {};
  char sched_state = '?';        // /proc state letter read before stopping
  long syscall_nr = -1;          // system call it was blocked in before stopping, -1 if none
};

// Hooks the runtime installs so a thread is never stopped while it holds an
// allocator lock: `inside` says whether the current thread is in a critical
// section; the section's exit calls StopIfRequested().
struct StopGate {
  bool (*inside)() = nullptr;
};
void SetStopGate(StopGate gate);
// Called by a critical section's exit: stops now if a stop arrived inside it.
void StopIfRequested();

class WorldStop {
 public:
  // slots must hold room for every thread that may exist; `capacity` slots.
  WorldStop(ThreadSlot* slots, size_t capacity) : slots_(slots), capacity_(capacity) {}
  ~WorldStop();

  // Stops all threads but the caller. Returns false (and resumes whatever it
  // stopped) if there are more threads than slots or the signal cannot be
  // installed; threads that do not answer within timeout_ms are marked
  // kUnresponsive and the stop goes on without them.
  bool Stop(int timeout_ms = 2000);
  // Lets every stopped thread go and waits until all have left the handler.
  void Resume();

  size_t count() const { return count_; }
  ThreadSlot& slot(size_t i) { return slots_[i]; }
  bool needs_more_slots() const { return overflow_; }

 private:
  bool SignalNewThreads(bool* added);
  void WaitForAnswers(int timeout_ms);

  ThreadSlot* slots_;
  size_t capacity_;
  size_t count_ = 0;
  bool stopped_ = false;
  bool overflow_ = false;
};

// For a forked child (registered with pthread_atfork by the first Stop, and
// callable again): forgets every stop the parent had running or pending, so
// no thread of the child ever waits for a dumper that stayed in the parent.
void ForkChild();

// The signal used to stop threads: SIGRTMIN+4 unless LIBDUMP_STOP_SIGNAL names
// another (docs/ENVIRONMENT.md; a refused one is reported and the default kept).
int StopSignal();

}  // namespace libdump::capture
