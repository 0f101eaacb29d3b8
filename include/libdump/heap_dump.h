// Heap dumps of the running process.
//
//   #include "libdump/heap_dump.h"
//   int fd = open("app.dump", O_WRONLY | O_CREAT | O_TRUNC, 0600);
//   if (int err = libdump::WriteHeapDump(fd)) { ... strerror(err) ... }
//
// The dump (docs/FORMAT.md) holds every live object of the libdump heap with
// its type when known, every thread with its frames, and the roots: stacks,
// registers, globals, thread-local storage and what AddRoot registered.
// `readdump` reads it, `dumptohprof` turns it into hprof for VisualVM/MAT.
#pragma once

#include <cstdint>

namespace libdump {

struct HeapDumpOptions {
  bool zstd = false;           // compress the stream with zstd
  int zstd_level = 1;
  bool seed_only = false;      // only the seed's record kinds: no libdump extensions
  bool fork_snapshot = false;  // stop, capture, fork: the child writes while the program runs on
  // Processes compressing in parallel: 0 is LIBDUMP_HEAPDUMP_THREADS, or
  // every CPU the process may run on (sched_getaffinity); 1 compresses on
  // the dumping thread.
  int threads = 0;
};

// The options of the dumps the process starts itself, from the environment:
// zstd as given, LIBDUMP_HEAPDUMP_ZSTD_LEVEL, and LIBDUMP_HEAPDUMP_MODE
// (fork or stop; unset: fork when compressed). docs/ENVIRONMENT.md.
HeapDumpOptions HeapDumpOptionsFromEnvironment(bool zstd);

// Writes a heap dump to fd. Every other thread is stopped while memory is
// read and resumes afterwards, also when writing fails. Returns 0, or the
// errno of the failure (EPIPE, ENOSPC, EBADF, ...); the process goes on.
int WriteHeapDump(int fd, const HeapDumpOptions& options = {});

// Arms a heap dump for the first allocation that fails (the allocator cannot
// get memory from the system), like HotSpot's HeapDumpOnOutOfMemoryError:
// written once per process, to path_pattern ("%p" pid, "%t" time; null means
// heap.%p.%t.%n.dump), mode 0600, by the failing thread before malloc returns
// null or new throws. Unmodified programs: LIBDUMP_HEAPDUMP_ON_OOM=1 with
// LIBDUMP_HEAPDUMP_PATH. Returns false if the pattern is longer than 4095.
// Arm it at start-up: not while another thread may be failing an allocation.
bool SetHeapDumpOnOutOfMemory(const char* path_pattern, const HeapDumpOptions& options = {});
void ClearHeapDumpOnOutOfMemory();

// Registers the pointer stored at *slot as a root with a description readers
// show (ROOT UNKNOWN in hprof). The slot is read at each dump.
void AddRoot(const void* slot, const char* description);
void RemoveRoot(const void* slot);

// Records fn as obj's finalizer, as Go's SetFinalizer does: each dump lists
// it (a finalizer record; dumptohprof keeps its object visible). libdump does
// not call fn: C++ frees explicitly, so the program runs it where it frees
// obj, and removes the record with a null fn.
void SetFinalizer(void* obj, void (*fn)(void*));

}  // namespace libdump

// The C entry points (libdump_write_heap_dump, ...), same meaning.
#include "libdump/libdump.h"
