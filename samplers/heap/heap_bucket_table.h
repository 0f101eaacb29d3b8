// The heap profile's buckets: sampled allocations grouped by (stack, size,
// rate). A free is charged to its sample's bucket through the token the
// allocator kept for it (the bucket's address, beside the span's sampled
// bits), or, for the samples the allocator has no room for (a span's second
// live sample), through this table's map from object to bucket.
//
// Called from inside the allocator, so nothing here allocates from the heap
// being profiled: memory comes from mmap, and the lock is a spin lock that
// no allocation path ever waits on while holding another allocator lock.
//
// ForEachLive reads without that lock: the heap dump calls it with the world
// stopped, possibly while a stopped thread holds the lock mid-update (the
// allocator's sample hook runs outside its stop-deferring sections). Writers
// therefore publish every change with one atomic store, in an order that
// leaves the table readable at any instruction: a bucket is complete before
// a slot points to it, a slot's bucket before its address, a grown slot
// array before it replaces the old one, and an old array is unmapped only
// when no reader is inside.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "samplers/heap/hot_region.h"
#include "samplers/unwind/frame_pointer_walk.h"
#include "samplers/common/bucket_snapshot.h"
#include "samplers/common/table_memory.h"

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

class alignas(64) HeapProfileTable {
 public:
  // hot: where the table puts what every sample reads (its bucket heads,
  // live array and first buckets), while it has room; null for plain
  // mappings. It must outlive the table.
  explicit HeapProfileTable(HotRegion* hot = nullptr);
  ~HeapProfileTable();
  HeapProfileTable(const HeapProfileTable&) = delete;
  HeapProfileTable& operator=(const HeapProfileTable&) = delete;

  // Starts loading the live-table line p hashes to. Between two samples a
  // busy program evicts the table, and each sample reaches one line of it at
  // random: issued first, that miss overlaps the stack walk and the bucket
  // lookup instead of following them. Lock-free; a grow racing it only makes
  // the prefetch useless.
  void PrefetchLive(const void* p) const;
  // Returns the sample's token (the address of its bucket's free counter,
  // never 0) for the allocator to keep: the allocator counts the free
  // through it (SampleHooks). in_table: the allocator does not keep it, so
  // the table maps p to its bucket for RecordFree, StackOf and ForEachLive.
  uintptr_t RecordAlloc(const void* p, uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth,
                        bool in_table = true);
  // Ignored for pointers that were not recorded.
  void RecordFree(const void* p);
  // A kept token's stack (innermost first) and its depth. Lock-free;
  // buckets are never freed or changed.
  static const uintptr_t* TokenStack(uintptr_t token, size_t* depth);
  // StackOf for a kept token: its stack copied to out, up to max entries.
  static size_t StackOfToken(uintptr_t token, uintptr_t* out, size_t max);
  // The recorded stack of live sampled object p; 0 if none.
  size_t StackOf(const void* p, uintptr_t* out, size_t max);
  // Allocates outside the lock, so the allocator may sample meanwhile.
  std::vector<HeapBucketSnapshot> Snapshot();
  size_t live_sampled();
  // Calls visit for every live sampled object (address, bucket size, stack
  // innermost first). Lock-free and allocation-free; see the note above.
  // With writers running it is weakly consistent: an object recorded or
  // freed meanwhile may or may not be visited; any other live one is.
  void ForEachLive(void (*visit)(void* ctx, uintptr_t addr, size_t size, const uintptr_t* pcs, size_t npcs),
                   void* ctx);

 private:
  struct Bucket;
  struct LiveSlot {
    std::atomic<uintptr_t> ptr;  // 0 empty, 1 tombstone; stored after bucket
    std::atomic<Bucket*> bucket;
  };
  struct LiveArray {
    size_t cap;         // a power of two
    LiveArray* retired;  // next on the list of replaced arrays
    LiveSlot slots[];
  };
  void* Map(size_t n);
  void Unmap(void* p, size_t n);
  LiveArray* NewLiveArray(size_t cap);
  void FreeLiveArray(LiveArray* a);
  void* Alloc(size_t n);
  // A token is the address of its bucket's free counter (SampleHooks).
  static uintptr_t TokenOf(const Bucket* b);
  static const Bucket* BucketOf(uintptr_t token);
  // What identifies a bucket's stack (with its size, rate and depth): hash
  // picks the chain, check is a second, independent hash.
  struct StackHash {
    uint64_t hash, check;
  };
  static StackHash Hash(uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth);
  // Lock-free.
  Bucket* FindBucket(StackHash key, uint64_t size, int64_t rate, size_t depth) const;
  // Under lock_.
  Bucket* AddBucket(StackHash key, uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth);
  void LiveInsert(uintptr_t p, Bucket* b);
  LiveSlot* LiveFind(uintptr_t p);
  void LiveGrow();
  friend HeapProfileTable& GlobalHeapTable();  // its fork handlers take the lock
  void Lock();
  void Unlock() { lock_.Unlock(); }

  // What a sample's record and a sampled free read and write, in the first
  // cache line (the table is page-aligned): between two samples the program
  // has usually evicted all of it, so each line is a miss per sample.
  TableLock lock_;
  static constexpr size_t kBucketHeads = 1 << 14;
  std::atomic<Bucket*>* heads_;  // chains, published with release stores
  std::atomic<LiveArray*> live_{nullptr};
  // live_'s cap - 1; atomic only for PrefetchLive, which reads it unlocked.
  std::atomic<size_t> live_mask_{0};
  size_t live_used_ = 0;   // including tombstones
  size_t live_count_ = 0;
  Bucket* all_ = nullptr;
  size_t nbuckets_ = 0;
  TableArena arena_;
  LiveArray* retired_ = nullptr;  // replaced arrays a reader may still be in
  LiveArray* spare_ = nullptr;    // a replaced array no reader is in, for reuse
  std::atomic<int> readers_{0};   // ForEachLive calls in progress
  HotRegion* hot_;
};

// The process-wide table the allocator hook fills.
HeapProfileTable& GlobalHeapTable();
// The same once created, else null; never creates it (no guard lock), so a
// stopped-world reader can call it.
HeapProfileTable* GlobalHeapTableIfCreated();

}  // namespace libdump::samplers
