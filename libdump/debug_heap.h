// The debug heap (LIBDUMP_DEBUG_HEAP=1, read once at initialization): the
// allocator checks its own invariants on the slots it hands out and the
// program's use of the slots it freed.
//
// - Every small slot that is free is filled with a poison byte (spans are
//   poisoned when made, a slot when freed); a slot on a list holds its link
//   in its first word and the key in its second (free_list.h), poison after.
// - A freed slot waits in a quarantine: a ring per class and thread, which
//   malloc does not hand out. A full ring evicts its oldest slot, in ring
//   order, back to its span; so a slot is reused only after at least
//   QuarantineDepth(size) more frees of its class by the thread (40 slots or
//   32 KiB). No batch is kept in a transfer cache.
// - The poison is checked when a slot leaves the quarantine, when the central
//   list hands it out of its span, when its span goes back to the page heap
//   and when malloc hands it out.
// A failed check prints one line (`libdump: write after free ... at 0x...`)
// and aborts. Large objects are not checked.
//
// Off, it costs the fast paths nothing: under it, sample_left stays
// negative, so every malloc leaves the fast path for AllocateSampled, and
// every list's max_length is 0, so every free leaves it for ShrinkList; both
// come here. (A load and a branch for the flag in malloc's fast path cost
// larson 1.3 % more instructions.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.h"

namespace libdump::internal {

struct ThreadHeap;

// Set once, before the first heap exists (EnsureInitialized), from
// LIBDUMP_DEBUG_HEAP.
extern LIBDUMP_HIDDEN bool g_debug_heap;

inline constexpr unsigned char kPoisonByte = 0xdf;
inline constexpr uint64_t kPoisonWord = 0xdfdfdfdfdfdfdfdfULL;

// Reads LIBDUMP_DEBUG_HEAP (called by EnsureInitialized).
void InitDebugHeap();
// Fills n bytes at p with the poison.
void Poison(void* p, size_t n);
// Ends the process if the free slot p of `size` bytes does not hold the
// poison from byte `from` on (a write after free).
void CheckPoison(const void* p, size_t size, size_t from);
// The debug heap's malloc (small and large).
void* DebugAllocate(size_t size);
// The free of a small slot whose checks passed, just pushed on h's list of
// class c (ShrinkList): off the list into the quarantine.
void Quarantine(ThreadHeap* h, int size_class);
// Whether p waits in h's quarantine of class c.
bool InQuarantine(const ThreadHeap* h, int size_class, const void* p);
// Gives every quarantined slot back (thread exit).
void DrainQuarantine(ThreadHeap* h);

}  // namespace libdump::internal
