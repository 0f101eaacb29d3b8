// The block and mutex profiles' buckets: for each stack, how many events it
// stands for and how long they waited, both as estimates (the samplers
// unbias each event when they record it, so the counts are fractional).
//
// Recorded from inside pthread lock interposition, so nothing here may
// allocate from the heap or take a pthread lock: memory comes from mmap, the
// lock is a spin lock, and each bucket, once made, lives as long as the
// process (a pointer to it stays valid, for the mutex profile's waiters).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "samplers/unwind/frame_pointer_walk.h"
#include "samplers/common/bucket_snapshot.h"
#include "samplers/common/table_memory.h"

namespace libdump::samplers {

struct ContentionBucketSnapshot {
  double count;     // events
  double delay_ns;  // their total wait
  std::vector<uintptr_t> stack;  // innermost first
};

class ContentionTable {
 public:
  struct Bucket;
  ContentionTable();
  ~ContentionTable();
  ContentionTable(const ContentionTable&) = delete;
  ContentionTable& operator=(const ContentionTable&) = delete;

  // Adds to the bucket of this stack (made if new) and returns it.
  Bucket* Record(const uintptr_t* pcs, size_t depth, double count, double delay_ns);
  // Adds to a bucket Record returned.
  void Add(Bucket* b, double count, double delay_ns);
  // Every bucket with a non-zero count. Allocates, outside the lock.
  std::vector<ContentionBucketSnapshot> Snapshot();
  // Zeroes every bucket (they stay, so that pointers held stay valid).
  void Clear();

  // After fork() only the forking thread runs: a lock taken in the prepare
  // handler is simply freed.
  void Lock();
  void Unlock() { lock_.Unlock(); }

 private:
  static constexpr size_t kHeads = 1 << 12;
  Bucket* FindLocked(uint64_t hash, const uintptr_t* pcs, size_t depth) const;
  void* Alloc(size_t n);

  TableLock lock_;
  Bucket** heads_;
  Bucket* all_ = nullptr;
  size_t nbuckets_ = 0;
  TableArena arena_;
};

}  // namespace libdump::samplers
