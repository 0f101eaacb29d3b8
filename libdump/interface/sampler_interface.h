// What samplers/ may use of the runtime, and nothing else of libdump/:
//   the sampling hooks and the kept-token count (SampleHooks, SetSampleHooks,
//   CountKeptSampleFree: allocator_hooks.h),
//   the kept tokens of live samples (SampleTokenOf, ForEachKeptSampleToken:
//   heap_walk.h),
//   aligned anonymous mappings (MapAnonymousAligned: map_aligned.h),
//   libdump's own allocations (SetOwnComponent: own_memory.h).
// The profilers do not link the allocator: they call these through weak
// references and do nothing when libdump.so is not loaded. Included as
// "sampler_interface.h" through the libdump_sampler_interface target.
#pragma once

#include "../allocator_hooks.h"
#include "../heap_walk.h"
#include "../map_aligned.h"
#include "../own_memory.h"
