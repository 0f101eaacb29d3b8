// The one lister of /proc/self/task: the threads of this process, read with
// raw system calls into the caller's memory, so that it runs while other
// threads are stopped (a heap dump) as well as in the profilers' workers.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <vector>

namespace libdump::proc {

// Writes up to max tids into out, in ascending order, and returns how many
// threads exist (which may exceed max), or -1 if /proc is unreadable.
long ListThreads(pid_t* out, size_t max);

// All of them, ascending, for a caller that may allocate (a profiler's
// worker); empty if /proc is unreadable.
std::vector<pid_t> ListThreads();

// Name (comm) and scheduler state letter ('R', 'S', 'D', 't', ...) of a thread;
// name gets at most 16 bytes including the NUL. Returns false if the thread is gone.
bool ReadThreadStat(pid_t tid, char* name, size_t name_size, char* state);

// The number of the system call the thread is blocked in, -1 if it is
// running in user space (or gone): /proc/self/task/TID/syscall.
long ReadThreadSyscall(pid_t tid);

}  // namespace libdump::proc
