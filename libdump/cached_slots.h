// The free slots outside the central lists: on the threads' lists, in their
// quarantines (the debug heap) and in the transfer caches. Their live bits
// stay set (central_freelist.h); the walk and FindObject subtract them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.h"

namespace libdump::internal {

struct Span;

// A sorted copy of the cached slots.
//
// Taken with every heap (the world stopped, or in a fork child) it is exact:
// a thread stopped inside a push or a pop leaves a well-formed list (the
// fast paths store the head last), and one inside a transfer holds a
// section or a central lock, which neither a stop nor fork lets it keep.
// Taken among running threads it holds the calling thread's slots and the
// transfer caches' only: other threads' lists, which change under a reader,
// are not followed, and their slots read as live.
class CachedSlots {
 public:
  CachedSlots() = default;
  ~CachedSlots() { Clear(); }
  CachedSlots(const CachedSlots&) = delete;
  CachedSlots& operator=(const CachedSlots&) = delete;

  // Copies the slots into pages of its own (never the heap it describes).
  // Until then, or if those pages cannot be mapped, a question reads the
  // slot's key and, only if it is there, searches the calling thread's lists
  // and the class's transfer cache (other threads' slots read as live).
  void Take(bool every_heap);
  void Clear();

  // Whether slot p (of a small span of class c, live bit set) is cached.
  bool Contains(uintptr_t p, int c) const;
  // Sets, in bits (a word per 64 slots), the cached slots of small span s.
  void Collect(const Span* s, uint64_t* bits) const;

 private:
  void Add(uintptr_t p) {
    if (n_ < cap_) addrs_[n_++] = p;
  }
  uintptr_t* addrs_ = nullptr;
  size_t n_ = 0;
  size_t cap_ = 0;
  size_t bytes_ = 0;
  bool copied_ = false;
};

}  // namespace libdump::internal
