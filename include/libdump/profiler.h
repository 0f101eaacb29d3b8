// Always-on sampled profilers whose output opens in `go tool pprof`.
//
// CPU: every thread gets its own CLOCK_THREAD_CPUTIME_ID timer that sends it
// SIGPROF each 1/hz seconds of CPU it uses; the handler records the stack.
// Heap: the allocator samples about one allocation per MemProfileRate bytes
// (a Poisson process over allocated bytes) and records its stack; the
// profile unbiases each sample by the probability it had to be taken.
//
// Environment (read when libdump_samplers is loaded, e.g. by LD_PRELOAD of
// libdumpprof.so): LIBDUMP_CPUPROFILE=path profiles from start to exit,
// LIBDUMP_HEAPPROFILE=path writes the heap profile at exit,
// LIBDUMP_MEMPROFILE_RATE=bytes sets the heap sampling rate.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace libdump {

// ---- CPU profiler (like Go's runtime/pprof.StartCPUProfile) ----

// Starts profiling every thread of the process, present and future; the
// profile is written to fd by StopCPUProfile. False if a profile is already
// running or the timers cannot be created (errno set).
bool StartCPUProfile(int fd);
// Stops sampling and writes the gzipped profile.proto. False on a write error.
bool StopCPUProfile();
// The same, written to fd instead of the start's descriptor (which may then
// be -1): for a caller that opens its output only once the profile is done,
// so a process killed before that leaves no file behind.
bool StopCPUProfile(int fd);
// Samples per second of CPU time per thread. Takes effect at the next start.
// hz <= 0 is ignored. Default 100.
void SetCPUProfileRate(int hz);
int CPUProfileRate();

struct CPUProfileStats {
  uint64_t samples;    // signals handled
  uint64_t overruns;   // timer expirations merged into a signal (si_overrun), counted as weight
  uint64_t dropped;    // samples lost to a full buffer
  uint64_t threads;    // threads that got a timer
};
CPUProfileStats GetCPUProfileStats();

// ---- Heap profiler (like Go's runtime.MemProfileRate / pprof "heap") ----

// Mean bytes between sampled allocations; 1 samples every allocation, 0 turns
// sampling off. Default 512 KiB once the heap profiler is installed.
void SetMemProfileRate(int64_t bytes);
int64_t MemProfileRate();

// Connects the heap profiler to libdump's allocator (when it is in the
// process) at the current MemProfileRate. False if the allocator is absent.
bool InstallHeapProfiler();

enum class HeapProfileKind {
  kHeap,    // default sample index inuse_space
  kAllocs,  // default sample index alloc_space
};
// Writes alloc_objects, alloc_space, inuse_objects, inuse_space, unbiased.
bool WriteHeapProfile(int fd, HeapProfileKind kind = HeapProfileKind::kHeap);

// The allocation stack of a sampled live object, for heap dumps. Returns the
// number of return addresses written (innermost first), 0 if p was not sampled.
size_t SampledAllocationStack(const void* p, uintptr_t* pcs, size_t max);

// Calls visit for every live sampled allocation: its address, size and
// allocation stack (innermost first, allocator frames included; pcs stays
// valid for the life of the process). The size is what the allocator
// charged: the size-class slot, or the page-rounded span of a large object.
// Safe while WriteHeapDump has stopped the world: takes no lock that a
// stopped thread can hold and allocates nothing. Exact when every other
// thread is stopped, except that an allocation or free whose profiler
// update was interrupted may or may not be visited; with other threads
// running, objects recorded or freed during the call may or may not be.
void ForEachSampledAllocation(void (*visit)(void* ctx, uintptr_t addr, size_t size, const uintptr_t* pcs,
                                            size_t npcs),
                              void* ctx);

// ---- Block and mutex profiles (Go's SetBlockProfileRate, SetMutexProfileFraction) ----
//
// Both see the waits of pthread mutexes, rwlocks, condition variables,
// semaphores, barriers and joins (so std::mutex, std::shared_mutex,
// std::condition_variable, std::thread::join) through interposition: in
// libdump.so and libdumpprof.so (LD_PRELOAD), or in a program that links
// libdump::pthread_interpose. Sample types contentions/count and
// delay/nanoseconds, as Go's.

// Block profile: about one blocking event per ns nanoseconds spent blocked.
// An event of d >= ns is always recorded; a shorter one with probability
// d/ns, and then counted as ns/d events of total delay ns (Go's bias
// correction), so counts and delays are unbiased. 1 records every event,
// <= 0 turns the profile off (the default).
void SetBlockProfileRate(int64_t ns);
int64_t BlockProfileRate();
// Writes the block profile (gzipped profile.proto); false on a write error.
bool WriteBlockProfile(int fd);
// Forgets the events recorded so far.
void ResetBlockProfile();

// Mutex profile: on average one contended mutex or rwlock acquisition in n
// is sampled; its delay is charged to the stacks that released the lock
// while it waited, and values are multiplied by n when written. 0 turns it
// off (the default); n < 0 only reads. Returns the previous fraction.
int SetMutexProfileFraction(int n);
bool WriteMutexProfile(int fd);
void ResetMutexProfile();

// True when the pthread interposition is in the process: without it the
// block and mutex profiles stay empty.
bool WaitsInterposed();

// ---- Threads profile (Go's goroutine profile) ----

// Every thread's stack, with the world stopped as for a heap dump (for
// microseconds to milliseconds). debug 0: gzipped pprof, sample type
// goroutine/count (Go's names), one sample per distinct stack; 1: Go's text,
// counts by identical stack with a "#" line per frame; 2: one block per
// thread: "thread TID [STATE, WAIT REASON]: NAME", then its frames.
// False if the world cannot be stopped or on a write error.
bool WriteThreadProfile(int fd, int debug = 0);

// ---- Threadcreate profile (Go's pprof "threadcreate") ----

// Every live thread, counted by the stack that created it: once enabled,
// pthread_create records the creating stack (allocation-free) and the
// record goes when the thread exits. The initial thread, and threads
// started before the profile was enabled, without pthread_create or in a
// sanitizer build (whose runtime owns pthread_create), count under
// libdump::samplers::CreatorNotRecorded.
// Enabled by LIBDUMP_THREADCREATEPROFILE, LIBDUMP_PPROF_ADDR and
// StartDebugServer, or by this call: the first capture sets libunwind up
// (~1 ms, ~400 KB resident), which is done here rather than in a
// pthread_create, and not at all in a process that never asks.
void EnableThreadCreateProfile();
// debug 0: gzipped pprof, sample type threadcreate/count; 1: Go's text.
// False if /proc/self/task cannot be read or on a write error.
// LD_PRELOAD: LIBDUMP_THREADCREATEPROFILE=path writes it at exit.
bool WriteThreadCreateProfile(int fd, int debug = 0);

// ---- /debug/pprof/ over HTTP (Go's net/http/pprof) ----

// Serves /debug/pprof/ (index, profile?seconds=N, heap, allocs, block,
// mutex with debug=0/1 and seconds=N deltas, goroutine, threads,
// threadcreate, cmdline, symbol, heapdump?zstd=1, flightrecorder) on
// address "HOST:PORT" from threads of its own, whose allocations and CPU
// time the profiles leave out; "" means 127.0.0.1:6060, an empty HOST 127.0.0.1:
// loopback unless the address says otherwise. Port 0 picks a free port,
// returned in *bound. Turns the heap profiler on (InstallHeapProfiler).
// False with *error set if the address is bad, cannot be bound, or a server
// already runs. LD_PRELOAD: LIBDUMP_PPROF_ADDR=127.0.0.1:6060.
bool StartDebugServer(const std::string& address, std::string* error = nullptr, std::string* bound = nullptr);

// ---- The sampling distance, for allocators ----

// -ln(u) for u in (0, 1], to within a few ulps: u = 2^e * m with m in
// [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172, by
// its odd series to s^21. Arithmetic only: a heap sample comes hundreds of
// allocations after the last, when libm's log tables have left the cache,
// and three cache misses cost more than this whole function. The series is
// summed in Estrin's order (pairs, then powers s^4, s^8, s^16) rather than
// Horner's: five dependent multiply-adds after the division instead of ten,
// which halves the latency a sample waits on. The range reduction selects
// instead of branching: m > sqrt(2) is a coin toss for a predictor.
inline double NegativeLog(double u) {
  const uint64_t bits = std::bit_cast<uint64_t>(u);
  const double m1 = std::bit_cast<double>((bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52));
  const bool high = m1 > 1.4142135623730951;
  const int e = static_cast<int>(bits >> 52) - 1023 + high;
  // 0.5 or 1.0 built from the exponent bits: GCC turns a ?: into a branch.
  const double m = m1 * std::bit_cast<double>(static_cast<uint64_t>(1023 - high) << 52);
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  const double s4 = s2 * s2;
  const double s8 = s4 * s4;
  const double s16 = s8 * s8;
  const double p01 = (1 + s2 * (1.0 / 3)) + s4 * (1.0 / 5 + s2 * (1.0 / 7));
  const double p23 = (1.0 / 9 + s2 * (1.0 / 11)) + s4 * (1.0 / 13 + s2 * (1.0 / 15));
  const double p45 = (1.0 / 17 + s2 * (1.0 / 19)) + s4 * (1.0 / 21);
  const double series = (p01 + s8 * p23) + s16 * p45;
  // ln 2 split so that e * hi is exact (hi has 32 trailing zero bits).
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return -(de * kLn2Hi + (de * kLn2Lo + 2 * s * series));
}

// Distance in bytes to the next sampled allocation: exponential with the
// given mean, so sampling is a Poisson process over allocated bytes and an
// allocation of s bytes is sampled with probability 1 - exp(-s/mean)
// whatever came before it. state is a per-thread xorshift state (non-zero).
// mean 1 -> 0 (every allocation); mean <= 0 -> INT64_MAX (never).
inline int64_t NextSampleDistance(uint64_t* state, int64_t mean) {
  if (mean <= 0) return INT64_MAX;
  if (mean == 1) return 0;
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  // u in (0, 1]: 53 random bits, never 0, so the log is finite.
  const double u = static_cast<double>((x >> 11) + 1) * 0x1.0p-53;
  return static_cast<int64_t>(NegativeLog(u) * static_cast<double>(mean));
}

}  // namespace libdump
