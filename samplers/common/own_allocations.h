// The profilers' own allocations (the CPU profiler's worker and its stack
// counts, symbolization when a profile is written, the unwind tables, the
// preload's start-up and exit) are not the program's: a heap profile that
// counted them would show a program that allocates nothing allocating half a
// megabyte at exit. Code that allocates for the profilers runs inside an
// OwnAllocationScope; the heap profiler's hook records a sample taken there
// under one marker stack (OwnAllocationMarker), which heap profiles leave
// out and heap dumps show by that name.
//
// Under libdump's allocator the scope also types those allocations as
// libdump's own (libdump/own_memory.h: the profilers' tables, or the
// component given), so that heap dumps leave them out of the program's
// answers; they then never reach the sampling hook.
#pragma once

#include <cstdint>

#include "libdump/interface/sampler_interface.h"

namespace libdump::internal {
// libdump.so's, when it is loaded (own_memory.h).
OwnComponent SetOwnComponent(OwnComponent c) __attribute__((weak));
}  // namespace libdump::internal

namespace libdump::samplers {

// initial-exec: read by the allocator's hook, where __tls_get_addr (which
// can allocate) must not run.
inline thread_local int t_own_allocations __attribute__((tls_model("initial-exec"))) = 0;

class OwnAllocationScope {
 public:
  explicit OwnAllocationScope(internal::OwnComponent c = internal::OwnComponent::kProfiler) {
    ++t_own_allocations;
    if (&internal::SetOwnComponent != nullptr) prev_ = internal::SetOwnComponent(c);
  }
  ~OwnAllocationScope() {
    if (&internal::SetOwnComponent != nullptr) internal::SetOwnComponent(prev_);
    --t_own_allocations;
  }
  OwnAllocationScope(const OwnAllocationScope&) = delete;
  OwnAllocationScope& operator=(const OwnAllocationScope&) = delete;

 private:
  internal::OwnComponent prev_ = internal::OwnComponent::kNone;
};

inline bool InOwnAllocationScope() { return t_own_allocations != 0; }

// A thread that only serves the profilers (the /debug/pprof server's): the
// CPU profiler drops its samples, as its allocations are left out. Not every
// OwnAllocationScope: the CPU profile counts the profilers' work done on
// the program's behalf (its worker, a profile written by the program), so
// that its total stays the process's CPU time. initial-exec: read in the
// SIGPROF handler.
inline thread_local bool t_profiler_thread __attribute__((tls_model("initial-exec"))) = false;

// The one frame of the stack the profilers' own samples are recorded under
// (a return address into the marker function, so that it symbolizes to it).
uintptr_t OwnAllocationMarker();

}  // namespace libdump::samplers
