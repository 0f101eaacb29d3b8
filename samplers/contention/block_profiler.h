// The block profile (Go's runtime.SetBlockProfileRate and pprof "block"):
// the time threads spend waiting in pthread locks, condition variables,
// semaphores, barriers and joins, charged to the waiting stack.
#pragma once

#include <cstdint>
#include <vector>

#include "samplers/contention/contention_table.h"
#include "libdump/format/pprof_profile.h"

namespace libdump::samplers {

ContentionTable& BlockTable();
ContentionTable& MutexTable();

// contentions/count, delay/nanoseconds, the profilers' own frames removed
// from the top of each stack; each value multiplied by scale (the mutex
// profile's fraction, 1 for the block profile, whose events are unbiased
// as recorded). period: the rate or fraction.
pprof::ProfileBuilder NewContentionProfileBuilder(int64_t period);
void BuildContentionProfile(pprof::ProfileBuilder& b, const std::vector<ContentionBucketSnapshot>& buckets,
                            double scale);

// Go's choice for one wait of ns nanoseconds at rate: a wait of at least
// rate is always sampled and counts once; a shorter one is sampled with
// probability ns/rate (draw: uniform 64-bit) and counts rate/ns times, with
// delay rate, so that the expected count and delay are the true ones.
struct BlockSample {
  bool sampled;
  double count, delay_ns;
};
BlockSample SampleBlockEvent(int64_t ns, int64_t rate, uint64_t draw);

}  // namespace libdump::samplers
