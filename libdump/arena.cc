#include "arena.h"

#include <sys/mman.h>

#include <algorithm>

#include "fatal.h"
#include "lock.h"
#include "map_aligned.h"

namespace libdump::internal {

constinit ArenaSet g_arenas;

namespace {

void* MapAligned(size_t bytes, size_t align, uintptr_t hint) {
  // Try to extend the heap upwards so arenas tend to form one range.
  if (hint != 0) {
    void* p = mmap(reinterpret_cast<void*>(hint), bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED) {
      if (reinterpret_cast<uintptr_t>(p) == hint) return p;
      munmap(p, bytes);  // old kernels ignore MAP_FIXED_NOREPLACE and place it elsewhere
    }
  }
  return MapAnonymousAligned(bytes, align, MAP_NORESERVE);
}

SpinLock g_meta_lock;
uintptr_t g_meta_next = 0;
uintptr_t g_meta_end = 0;
std::atomic<uint64_t> g_meta_bytes{0};
std::atomic<bool> g_meta_huge{true};

// Metadata grows with the heap (span objects, and the type tables of spans
// with typed objects: ~10% of a heap of small typed objects). Past its first
// MiBs it comes in 2 MiB-aligned chunks advised MADV_HUGEPAGE, as the arenas
// do: a fork (a fork-snapshot heap dump) then copies one page-table entry per
// 2 MiB of it instead of 512. Bump-allocated, so each huge page is full.
constexpr uint64_t kMetaSmallPages = 8 << 20;

}  // namespace

Arena ArenaSet::Grow(size_t bytes) {
  const size_t n = count_.load(std::memory_order_relaxed);
  if (n == kMaxArenas) return Arena{0, 0};
  void* mem = MapAligned(bytes, kHugePageSize, hi_.load(std::memory_order_relaxed));
  if (mem == nullptr) return Arena{0, 0};
  const uintptr_t start = reinterpret_cast<uintptr_t>(mem);
  const Arena a{start, start + bytes};
  size_t i = n;
  for (; i > 0 && starts_[i - 1].load(std::memory_order_relaxed) > start; --i) {
    starts_[i].store(starts_[i - 1].load(std::memory_order_relaxed), std::memory_order_relaxed);
    ends_[i].store(ends_[i - 1].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  starts_[i].store(a.start, std::memory_order_relaxed);
  ends_[i].store(a.end, std::memory_order_relaxed);
  count_.store(n + 1, std::memory_order_release);
  if (n == 0 || a.start < lo_.load(std::memory_order_relaxed)) lo_.store(a.start, std::memory_order_release);
  if (a.end > hi_.load(std::memory_order_relaxed)) hi_.store(a.end, std::memory_order_release);
  reserved_.fetch_add(bytes, std::memory_order_relaxed);
  return a;
}

void SetMetaHugePages(bool on) { g_meta_huge.store(on, std::memory_order_relaxed); }

void* MetaAlloc(size_t bytes) {
  bytes = (bytes + 63) & ~size_t{63};
  LockGuard g(g_meta_lock);
  if (g_meta_next + bytes > g_meta_end) {
    const size_t chunk = (std::max(bytes, kHugePageSize) + kHugePageSize - 1) & ~(kHugePageSize - 1);
    // Next to the previous chunk where possible: one mapping, not hundreds.
    void* mem = MapAligned(chunk, kHugePageSize, g_meta_end);
    if (mem == nullptr) Fatal("out of memory for allocator metadata", nullptr);
    if (g_meta_huge.load(std::memory_order_relaxed) && g_meta_bytes.load(std::memory_order_relaxed) >= kMetaSmallPages) {
      madvise(mem, chunk, MADV_HUGEPAGE);
    }
    g_meta_next = reinterpret_cast<uintptr_t>(mem);
    g_meta_end = g_meta_next + chunk;
  }
  void* p = reinterpret_cast<void*>(g_meta_next);
  g_meta_next += bytes;
  g_meta_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return p;
}

uint64_t MetaBytes() { return g_meta_bytes.load(std::memory_order_relaxed); }
void MetaForkPrepare() { g_meta_lock.lock(); }
void MetaForkParent() { g_meta_lock.unlock(); }
void MetaForkChild() { g_meta_lock.ResetAfterFork(); }

}  // namespace libdump::internal
