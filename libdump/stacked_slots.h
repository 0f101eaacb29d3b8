// The slots on the threads' stacks of recent frees: free, though their live
// bits stay set (recent_frees.h). The walk and FindObject subtract them, as
// they subtract remote frees that the owner has not collected yet.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.h"

namespace libdump::internal {

struct Span;
struct ThreadHeap;

// Whether slot p is on h's stack of class c. Exact on h's own thread.
bool OnStack(const ThreadHeap* h, int c, uintptr_t p);

// A sorted copy of every heap's stacks. Taken with the world stopped it is
// exact; with threads running, a slot pushed or popped while it is taken may
// or may not be in it, which is the walk's own promise for objects freed or
// allocated during a walk (an entry is read only below a height read with
// acquire, after the push that wrote it).
class StackedSlots {
 public:
  StackedSlots() = default;
  ~StackedSlots() { Clear(); }
  StackedSlots(const StackedSlots&) = delete;
  StackedSlots& operator=(const StackedSlots&) = delete;

  // Copies the stacks into pages of its own (never the heap it describes).
  // Before Take, or if those pages cannot be mapped, each question reads the
  // heaps' stacks instead, at a cost that grows with the number of threads;
  // Contains then reads the slot's key first and searches only if it is
  // there (a slot the program wrote after freeing it reads as live).
  void Take();
  void Clear();

  // Whether slot p (of a small span of class c, live bit set) was stacked.
  bool Contains(uintptr_t p, int c) const;
  // Sets, in bits (a word per 64 slots), the stacked slots of small span s.
  void Collect(const Span* s, uint64_t* bits) const;

 private:
  uintptr_t* addrs_ = nullptr;
  size_t n_ = 0;
  size_t bytes_ = 0;
  bool copied_ = false;  // else each question reads the heaps' stacks
};

}  // namespace libdump::internal
