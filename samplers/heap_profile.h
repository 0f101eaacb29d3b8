// The heap profile's buckets: sampled allocations grouped by (stack, size,
// rate), with a map from each sampled live object to its bucket so a free
// can be charged to the right one.
//
// Called from inside the allocator, so nothing here allocates from the heap
// being profiled: memory comes from mmap, and the lock is a spin lock that
// no allocation path ever waits on while holding another allocator lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stack_walk.h"

namespace libdump::samplers {

struct HeapBucketSnapshot {
  uint64_t size;  // bytes of each allocation in the bucket
  int64_t rate;   // MemProfileRate the samples were taken at
  uint64_t allocs, frees;
  std::vector<uintptr_t> stack;
};

// Estimated totals of all allocations a bucket's samples stand for.
struct HeapEstimate {
  double alloc_objects, alloc_space, inuse_objects, inuse_space;
};

// Each allocation of s bytes was sampled with probability 1 - exp(-s/rate)
// (exponential sampling distances make the choice independent of the past);
// dividing by it (Horvitz-Thompson) gives unbiased totals. Go's
// scaleHeapSample does the same per bucket; keying buckets by exact size and
// rate keeps the division exact rather than done on an average size.
HeapEstimate Unbias(const HeapBucketSnapshot& b);

class HeapProfileTable {
 public:
  HeapProfileTable();
  ~HeapProfileTable();
  HeapProfileTable(const HeapProfileTable&) = delete;
  HeapProfileTable& operator=(const HeapProfileTable&) = delete;

  void RecordAlloc(const void* p, uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth);
  // Ignored for pointers that were not recorded.
  void RecordFree(const void* p);
  // The recorded stack of live sampled object p; 0 if none.
  size_t StackOf(const void* p, uintptr_t* out, size_t max);
  // Allocates outside the lock, so the allocator may sample meanwhile.
  std::vector<HeapBucketSnapshot> Snapshot();
  size_t live_sampled();

 private:
  struct Bucket;
  struct LiveSlot {
    uintptr_t ptr;  // 0 empty, 1 tombstone
    Bucket* bucket;
  };
  void* Alloc(size_t n);
  Bucket* FindOrAddBucket(uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth);
  void LiveInsert(uintptr_t p, Bucket* b);
  LiveSlot* LiveFind(uintptr_t p);
  void LiveGrow();
  void Lock();
  void Unlock() { lock_.store(false, std::memory_order_release); }

  std::atomic<bool> lock_{false};
  static constexpr size_t kBucketHeads = 1 << 14;
  Bucket** heads_;
  Bucket* all_ = nullptr;
  size_t nbuckets_ = 0;
  char* arena_ = nullptr;
  size_t arena_left_ = 0;
  LiveSlot* live_ = nullptr;
  size_t live_cap_ = 0;
  size_t live_used_ = 0;  // including tombstones
  size_t live_count_ = 0;
};

// The process-wide table the allocator hook fills.
HeapProfileTable& GlobalHeapTable();

}  // namespace libdump::samplers
