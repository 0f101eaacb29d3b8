// What the pthread interposition reads on every lock call: which wait
// profiles are on, and the per-thread state of the slow path. The fast path
// with both off is one relaxed load of g_wait_profiling and a branch.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace libdump::samplers {

inline constexpr int kBlockProfiling = 1;  // SetBlockProfileRate(> 0)
inline constexpr int kMutexProfiling = 2;  // SetMutexProfileFraction(> 0)
inline constexpr int kFlightWaits = 4;     // a flight recorder runs: long waits go to its window
extern std::atomic<int> g_wait_profiling;

// Per thread. in_profiler: the thread is inside the profilers' own code
// (whose stack capture, or a program's lock used by something it calls, may
// come back into a profiled lock): its locks are passed through untimed.
// initial-exec: the general model may call __tls_get_addr, which can
// allocate, from inside a lock.
struct WaitThreadState {
  bool in_profiler;
  uint64_t rng;  // xorshift state, 0 until first used
};
extern constinit thread_local WaitThreadState t_wait __attribute__((tls_model("initial-exec")));

inline int64_t WaitClockNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A uniform 64-bit number from the calling thread's generator. Each thread's
// stream starts from the seed (SetWaitSamplingSeed) and the order in which
// threads first draw.
uint64_t WaitRandom();
// For tests: the seed later threads' generators start from.
void SetWaitSamplingSeed(uint64_t seed);
// Sets up libunwind now, outside any lock (its first call takes ~1 ms),
// before a profile or the flight recorder turns the waits on.
void WarmWaitStackCapture();

// The interposition's calls into the profilers, each made with
// t_wait.in_profiler set. A wait that began at t0 (WaitClockNs) and ended
// at t1, on lock (a mutex, rwlock, condition variable, semaphore, barrier or
// thread), for the block profile and the flight recorder (kFlightWaits):
void RecordBlockEvent(int64_t t0, int64_t t1);
// Mutex profile: a contended acquisition of mutex or rwlock `lock` begins
// at *t0 (0: not read yet, and then read here only if this one is sampled,
// so that the mutex profile alone reads no clock for 99 in 100); true if it
// was sampled (then MutexWaitEnd must follow).
bool MutexWaitBegin(const void* lock, int64_t* t0);
void MutexWaitEnd(const void* lock, int64_t t0, int64_t t1);
// Whether a sampled waiter may be waiting for lock: one relaxed load.
bool MutexMayHaveWaiters(const void* lock);
// lock is about to be released by the calling thread: charges the sampled
// waiters' delay since the last release to the calling stack.
void MutexRelease(const void* lock);

}  // namespace libdump::samplers
