// What the stack-keyed profiles' tables (the heap profile's, the block and
// mutex profiles') share beyond their memory (table_memory.h): the copy of
// every bucket a profile is written from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "samplers/common/table_memory.h"

namespace libdump::samplers {

// Every bucket of a table, each as a Snap with its stack (innermost first)
// in Snap::stack. Buckets are chained through `all` and hold `depth` pcs
// (at most max_frames) in `pcs`; fill(snap, bucket) copies the counts. The
// vectors are sized with the lock released, since the allocation may itself
// be sampled or block in a profiled lock, and the copy is retried if buckets
// were added meanwhile: the counts are read in one critical section.
template <class Snap, class Bucket, class Fill>
std::vector<Snap> SnapshotBuckets(TableLock& lock, const size_t& nbuckets, Bucket* const& all, size_t max_frames,
                                  Fill fill) {
  std::vector<Snap> out;
  std::vector<uintptr_t> stacks;
  std::vector<uint32_t> depths;
  size_t n;
  for (;;) {
    lock.Lock();
    n = nbuckets;
    lock.Unlock();
    out.resize(n);
    stacks.resize(n * max_frames);
    depths.resize(n);
    lock.Lock();
    if (nbuckets == n) break;
    lock.Unlock();
  }
  size_t i = 0;
  for (const Bucket* b = all; b != nullptr; b = b->all, ++i) {
    fill(out[i], *b);
    depths[i] = b->depth;
    std::memcpy(&stacks[i * max_frames], b->pcs, b->depth * sizeof(uintptr_t));
  }
  lock.Unlock();
  for (size_t j = 0; j < n; ++j) out[j].stack.assign(&stacks[j * max_frames], &stacks[j * max_frames] + depths[j]);
  return out;
}

// A stack as a hash-map key, for the profiles that count samples per stack
// while they write (the CPU profile, the flight recorder's CPU samples).
struct StackVectorHash {
  size_t operator()(const std::vector<uintptr_t>& v) const {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uintptr_t x : v) h = (h ^ x) * 0x100000001b3ULL;
    return static_cast<size_t>(h);
  }
};

}  // namespace libdump::samplers
