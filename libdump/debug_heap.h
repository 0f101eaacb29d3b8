// The debug heap (LIBDUMP_DEBUG_HEAP=1, read once at initialization): the
// allocator checks its own invariants on the slots it hands out and the
// program's use of the slots it freed.
//
// - Every small slot that is free is filled with a poison byte (spans are
//   poisoned when made, a slot when freed, locally or remotely); a
//   stacked slot keeps the key in its first word and poison after it.
// - A freed slot waits in a quarantine: its class's stack of recent frees,
//   which malloc no longer pops. A full stack evicts its oldest slot, in
//   ring order, to the bitmap; so a slot is reused only after at least
//   RecentDepth(size) more frees of its class (40 slots or 32 KiB).
// - The poison is checked when a slot leaves the quarantine, when its owner
//   folds in another thread's free of it, when its span goes back to the
//   page heap and when it is handed out, and every slot handed out is checked not to hold the key
//   (a slot handed out while stacked, or handed out twice).
// A failed check prints one line (`libdump: write after free ... at 0x...`)
// and aborts. Large objects are not checked.
//
// Off, it costs the fast paths nothing: under it, sample_left stays
// negative, so every malloc leaves the fast path for AllocateSampled, and
// the stacks' capacity is 0, so every free leaves it for ReturnSlot; both
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
// The debug heap's malloc (small and large) and its local free of a small
// slot whose checks passed (in place of StackSlot's push).
void* DebugAllocate(size_t size);
void DebugStackSlot(ThreadHeap* h, uint32_t size_class, void* p);
// A remote free's poison, written by the freeing thread: all but a first
// word that holds the key (the owner's check of a second free reads it).
void PoisonRemoteFree(void* p, size_t size);

}  // namespace libdump::internal
