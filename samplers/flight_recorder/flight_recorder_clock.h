// The flight recorder's timestamps: the CPU's time-stamp counter where it is
// invariant (constant rate, runs in every C-state: CPUID 0x80000007 EDX bit
// 8), else CLOCK_MONOTONIC. Events carry raw ticks; a snapshot converts them
// to CLOCK_MONOTONIC nanoseconds with one linear map, so that every event of
// a snapshot is placed by the same function and B/E order never changes.
//
// Why not clock_gettime per event: a recorded region reads the clock twice,
// and the vDSO's read is a TSC read plus the kernel's scaling (and, under a
// hypervisor without a stable TSC clocksource, a system call). The map's
// anchor is taken at the first Start; its rate is refined by the recorder's
// thread every 100 ms against CLOCK_MONOTONIC over the whole time since.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace libdump::samplers::flight {

inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// True once CalibrateClock found an invariant TSC. Written before the first
// recorder runs, read relaxed.
extern bool g_use_tsc;

// The event clock: never 0 (a region's begin of 0 means "not recorded").
inline int64_t Ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_use_tsc, 1)) return static_cast<int64_t>(__builtin_ia32_rdtsc());
#endif
  return MonotonicNs();
}

// A snapshot of the map from ticks to CLOCK_MONOTONIC ns.
struct ClockMap {
  int64_t tick0, ns0;
  double ns_per_tick;
  int64_t Ns(int64_t ticks) const { return ns0 + static_cast<int64_t>(static_cast<double>(ticks - tick0) * ns_per_tick); }
  int64_t Ticks(int64_t ns) const { return tick0 + static_cast<int64_t>(static_cast<double>(ns - ns0) / ns_per_tick); }
  // A duration in ns as ticks (MinAge).
  int64_t TicksFor(int64_t ns) const { return static_cast<int64_t>(static_cast<double>(ns) / ns_per_tick); }
};

// Once per process (the first Start; later calls return at once): chooses
// the clock, takes the anchor and a first rate over ~2 ms.
void CalibrateClock();
// The recorder's thread, every tick: the rate over all the time since the
// anchor. Async-signal-safe readers see either the old or the new rate.
void RefineClock();
ClockMap CurrentClockMap();  // async-signal-safe

}  // namespace libdump::samplers::flight
