// The free lists of the thread caches and of the transfer batches: singly
// linked through the slots themselves, as tcmalloc's are. A free slot on a
// list holds its successor in its first word and the key in its second
// (every class is at least 16 bytes); the pop that hands it out clears both,
// on the line its caller writes next, so that a new object never shows a
// stale link into the heap (which a conservative scan of it would follow).
//
// The key, odd and random per process, is held by exactly the slots on a
// list or in a transfer batch: a push writes it, a pop clears it, and so
// does the central list when a slot goes back to its span. A live object
// holds it only if the program copied it out of a freed one. What it
// catches of a second free, without the free reading the object (a load
// that missed there stalled every free):
// - the list's head freed again: at the free;
// - a slot on a list or in a batch freed again, which puts it on a list
//   twice: at the pop of its second copy, which finds no key, before it is
//   handed out twice;
// - a slot back in its span freed again: when its list gives it back (its
//   live bit is clear). If the program gets it from the list first, or the
//   span hands it out before, it is handed out twice: that second free is
//   not caught (tcmalloc, jemalloc and mimalloc check none without their
//   debug modes); the debug heap catches every one at the free.
//
// The links are read with relaxed atomics: the walk follows them with the
// world stopped (cached_slots.h), and a plain access would be a data race
// to the sanitizers' eyes, though not to the hardware's.
#pragma once

#include <cstdint>

#include "config.h"

namespace libdump::internal {

// Set before the first heap exists (EnsureInitialized).
extern LIBDUMP_HIDDEN uint64_t g_free_key;

inline void* NextFree(const void* slot) { return __atomic_load_n(static_cast<void* const*>(slot), __ATOMIC_RELAXED); }
inline void SetNextFree(void* slot, void* next) { __atomic_store_n(static_cast<void**>(slot), next, __ATOMIC_RELAXED); }
inline uint64_t KeyWord(const void* slot) { return __atomic_load_n(static_cast<const uint64_t*>(slot) + 1, __ATOMIC_RELAXED); }
inline bool HasFreeKey(const void* slot) { return KeyWord(slot) == g_free_key; }
inline void SetFreeKey(void* slot) { __atomic_store_n(static_cast<uint64_t*>(slot) + 1, g_free_key, __ATOMIC_RELAXED); }
inline void StoreKeyWord(void* slot, uint64_t w) { __atomic_store_n(static_cast<uint64_t*>(slot) + 1, w, __ATOMIC_RELAXED); }
inline void ClearFreeKey(void* slot) { StoreKeyWord(slot, 0); }
// What a slot handed out holds in its first 16 bytes: zeros.
inline void ClearLinks(void* slot) {
  SetNextFree(slot, nullptr);
  ClearFreeKey(slot);
}

}  // namespace libdump::internal
