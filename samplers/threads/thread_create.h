// The threadcreate profile (Go's pprof "threadcreate"): for each live
// thread, the stack that created it. pthread_create, interposed here, takes
// a record and fills it with the creating stack before glibc starts the
// thread; the record also carries the start routine to the trampoline, so
// the path allocates nothing. The new thread claims the record with its
// tid, and a thread-specific-data destructor gives it back as the thread
// ends (returning, pthread_exit or cancellation alike). Not in sanitizer
// builds: their runtimes interpose pthread_create themselves.
//
// The records live in mapped chunks, reused through a free list under a spin
// lock: taking and returning one allocates nothing from the heap, so the
// allocator may itself start threads. After fork() the child keeps only the
// forking thread's record (the others' threads are not in the child).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace libdump::samplers {

struct ThreadCreateRecord;

// Takes a record holding the thread's start routine and argument (for the
// trampoline) and, while recording, the calling stack (innermost first,
// this function's frame first). Null if no memory could be mapped.
ThreadCreateRecord* BeginThreadCreate(void* (*fn)(void*), void* arg);
// pthread_create failed: the record goes back unused.
void CancelThreadCreate(ThreadCreateRecord* r);
// The new thread's start routine (pthread_create passes the record as its
// argument): claims the record with the thread's tid, calls the start hook
// and the thread's own routine, and gives the record back as the thread
// ends, however it ends.
void* RunCreatedThread(void* record);

struct ThreadCreation {
  pid_t tid;
  std::vector<uintptr_t> stack;  // innermost first; empty: not created through pthread_create here
};
// Every live thread of the process (from /proc/self/task) with its
// creating stack if one was recorded: the initial thread, and threads
// started before libdump was loaded or without pthread_create, have none.
std::vector<ThreadCreation> LiveThreadCreations();

// Records taken and not given back (live threads, and threads being
// created): for tests, since a profile lists only threads in /proc anyway.
size_t ThreadCreateRecordsInUse();

// Whether pthread_create captures the creating stack (EnableThreadCreateProfile).
void SetThreadCreateRecording(bool on);

// Called in every thread started through pthread_create, before its start
// routine: the CPU profiler arms the thread's timer there.
void SetThreadStartHook(void (*hook)());

// The one frame of the stack that stands for "no creation recorded" in a
// profile (a return address into a marker function, as OwnAllocationMarker).
uintptr_t CreatorNotRecordedMarker();

}  // namespace libdump::samplers
