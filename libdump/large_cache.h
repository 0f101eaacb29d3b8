// Each thread's cache of freed large spans of up to 64 KiB. A large object
// otherwise costs its malloc and its free a trip through the page heap's lock
// (~1,200 instructions with the split, the merge and the decay's clock); a
// program that keeps replacing 32-64 KiB buffers then spends more there than
// in everything else it allocates. A freed span of at most
// kCachedLargeMaxPages pages stays whole in the freeing thread's cache, one
// list per page count, and the thread's next large malloc of that page count
// takes it back without a lock.
//
// What bounds its memory: kLargeCacheBytes per thread, committed pages the
// release policy cannot see (size classes up to 64 KiB, tried first, pinned
// up to 512 KiB per class and thread in partial spans: 1.27x the best
// peer's peak RSS on 4 threads). Thread exit and ReleaseFreeMemory give the
// cached spans back to the page heap.
//
// The heap walk stays exact and lock-free: a cached span keeps its state
// (kLarge) and its page-map entries, so the page heap never sees it, and its
// `large_free` flag, set by the free (an exchange, which also catches two
// frees of one object racing) and cleared by the malloc that takes it back,
// tells the walk and FindObject it holds no object.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.h"
#include "span.h"

namespace libdump::internal {

inline constexpr size_t kCachedLargeMaxPages = (size_t{64} << 10) >> kPageShift;
inline constexpr uint64_t kLargeCacheBytes = uint64_t{256} << 10;

struct LargeCache {
  Span* head[kCachedLargeMaxPages + 1] = {};  // by page count; linked through Span::next
  uint64_t bytes = 0;
};

// A cached span of exactly npages pages, taken out of the cache, or null.
inline Span* TakeCachedLarge(LargeCache& lc, size_t npages) {
  if (npages > kCachedLargeMaxPages) return nullptr;
  Span* s = lc.head[npages];
  if (s == nullptr) return nullptr;
  lc.head[npages] = s->next;
  s->next = nullptr;
  lc.bytes -= uint64_t{npages} << kPageShift;
  return s;
}

// Keeps a freed large span (its large_free flag set) if it is small enough
// and the cache has room; false otherwise.
inline bool PutCachedLarge(LargeCache& lc, Span* s) {
  const uint64_t bytes = uint64_t{s->npages} << kPageShift;
  if (s->npages > kCachedLargeMaxPages || lc.bytes + bytes > kLargeCacheBytes) return false;
  s->next = lc.head[s->npages];
  lc.head[s->npages] = s;
  lc.bytes += bytes;
  return true;
}

// Gives every cached span back to the page heap. Takes the page heap's lock;
// the caller is inside an allocator section and does not hold it.
void DrainLargeCache(LargeCache& lc);

}  // namespace libdump::internal
