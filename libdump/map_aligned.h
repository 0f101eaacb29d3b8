// Anonymous memory aligned beyond the page: mmap aligns to pages only, so
// this maps align bytes more and unmaps the unaligned ends. Shared by the
// arenas and the profiler's huge-page region (samplers/heap/hot_region.cc).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace libdump::internal {

// bytes at a multiple of align (a power of two), read-write; null on failure.
// flags: extra mmap flags (e.g. MAP_NORESERVE).
inline void* MapAnonymousAligned(size_t bytes, size_t align, int flags) {
  void* p = mmap(nullptr, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (raw + align - 1) & ~(uintptr_t{align} - 1);
  if (aligned > raw) munmap(p, aligned - raw);
  const uintptr_t tail = raw + bytes + align - (aligned + bytes);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace libdump::internal
