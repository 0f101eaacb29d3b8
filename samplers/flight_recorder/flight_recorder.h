// What the flight recorder offers the rest of libdump: the blocking-wait
// hook for the contention profiler, the snapshot the crash handler and the
// snapshot signal write, and the environment's configuration.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::samplers::flight {

int64_t NowNs();  // CLOCK_MONOTONIC, the timeline of every event

// A wait of the calling thread on a lock or condition, [begin_ns, end_ns],
// with the stack that waited (innermost first). For the block and mutex
// profilers: they decide which waits are long enough to record. Costs one
// relaxed load when no recorder runs.
void RecordWait(const char* what, int64_t begin_ns, int64_t end_ns, const uintptr_t* pcs, size_t n);

// Blocked waits the pthread interposition (pthread_interpose.cc, through
// the block profiler's RecordBlockEvent) reports: while a recorder runs,
// those of at least the threshold (default 10 ms, as JFR's) go to the
// window, named "blocked", with their stacks. WantsWait: one relaxed load.
void SetWaitThreshold(int64_t ns);
bool WantsWait(int64_t ns);

// An allocation the heap profiler sampled (size bytes at p, its stack),
// from inside the allocator: no allocation, no lock. One relaxed load when
// no recorder runs.
void RecordAllocation(const void* p, size_t size, const uintptr_t* pcs, size_t n);

// Writes the window as Trace Event JSON to fd without allocating or taking
// a lock (the crash handler's path): stacks named from the tables
// crash_symbols.h prepared at start (hex where they have no name, or when
// none were prepared), with the process's mappings beside them. sig names the signal in the trace (0:
// none). Returns bytes written, -1 if no recorder runs or another snapshot
// did not finish within wait_ms.
int64_t WriteWindowSignalSafe(int fd, int sig, int wait_ms);
bool Recording();  // async-signal-safe: a recorder runs in this process

// The running recorder's window, whoever started it (the environment, the
// program): symbolized JSON, and its CPU samples as pprof. For the
// /debug/pprof server. -1 / false with errno EINVAL (none runs) or EBUSY
// (another snapshot is being written).
int64_t WriteWindow(int fd);
bool WriteWindowCPUProfile(int fd);

// LIBDUMP_FLIGHT_RECORDER=1, _MAX_BYTES, _MIN_AGE, _ON_CRASH=path,
// _SIGNAL=sig (+ _FILE=path pattern): starts a recorder for the process's
// lifetime. For the preload. False if the variables ask for nothing.
bool StartFromEnvironment();

// The signal-requested snapshot: the recorder's thread writes the window to
// a new file (pattern with %p, %t) within 100 ms of the request.
void SetSnapshotPath(const char* pattern);
void RequestSnapshot();  // async-signal-safe

}  // namespace libdump::samplers::flight
