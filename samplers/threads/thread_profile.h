// The threads profile (Go's goroutine profile): every thread's stack, taken
// with the world stopped as the heap dump stops it (libdump::capture), so
// the stacks are of one instant.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace libdump::samplers {

struct ThreadStack {
  pid_t tid;
  std::string name;
  char state;        // /proc state letter before the stop ('R', 'S', 'D', ...)
  long syscall;      // the system call it was blocked in, -1 if none
  bool self;         // the thread that took the profile
  bool stopped;      // false: it did not answer the stop (no stack)
  std::vector<uintptr_t> pcs;  // return addresses, innermost first (the top pc + 1)
};

// False if the world could not be stopped (errno set).
bool CaptureThreadStacks(std::vector<ThreadStack>* out);

// Why a thread waits, from its system call ("futex", "nanosleep", ...), or
// its state when it runs.
std::string WaitReason(const ThreadStack& t);

}  // namespace libdump::samplers
