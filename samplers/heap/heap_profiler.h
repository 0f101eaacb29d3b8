// Heap profile writing, shared by the public API and the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplers/heap/heap_bucket_table.h"
#include "libdump/format/pprof_profile.h"
#include "libdump/profiler.h"

namespace libdump::samplers {

// alloc_objects, alloc_space, inuse_objects, inuse_space from unbiased
// buckets, with the allocator's own frames removed from the top of each
// stack. period: the current MemProfileRate. With before, a delta profile:
// what each bucket gained since that snapshot (in-use values may be < 0).
void BuildHeapProfile(pprof::ProfileBuilder& b, const std::vector<HeapBucketSnapshot>& buckets,
                      const std::vector<HeapBucketSnapshot>* before = nullptr);
// Go's legacy heap text (pprof's debug=1; go tool pprof reads it): a header
// "heap profile: IN: INBYTES [ALLOC: ALLOCBYTES] @ heap/2*rate", then per
// bucket its sampled counts and stack with a "#" line per frame, then the
// process's mappings after MAPPED_LIBRARIES:.
std::string HeapProfileText(const std::vector<HeapBucketSnapshot>& buckets, int64_t rate);
pprof::ProfileBuilder NewHeapProfileBuilder(HeapProfileKind kind, int64_t rate);

// The hooks the allocator calls for each sampled allocation and for the free
// of each sampled object whose token it did not keep
// (libdump::internal::SampleHooks).
uintptr_t OnSampledAllocation(void* p, size_t size, bool keeps_token);
void OnSampledFree(void* p, size_t size);
// Creates the global table and points the hooks at it: before they are
// first installed (or called directly, as a benchmark does).
void PrepareSampleHook();

}  // namespace libdump::samplers
