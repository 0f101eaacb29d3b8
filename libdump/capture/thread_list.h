// The threads of this process, read from /proc/self/task with raw syscalls
// into caller-provided memory, so it can run while other threads are stopped.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace libdump::capture {

// Writes up to max tids into out and returns how many threads exist (which may
// exceed max), or -1 if /proc is unreadable.
long ListThreads(pid_t* out, size_t max);

// Name (comm) and scheduler state letter ('R', 'S', 'D', 't', ...) of a thread;
// name gets at most 16 bytes including the NUL. Returns false if the thread is gone.
bool ReadThreadStat(pid_t tid, char* name, size_t name_size, char* state);

// The number of the system call the thread is blocked in, -1 if it is
// running in user space (or gone): /proc/self/task/TID/syscall.
long ReadThreadSyscall(pid_t tid);

}  // namespace libdump::capture
