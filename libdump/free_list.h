// The free lists of the thread caches and of the transfer batches: singly
// linked through the slots themselves, as tcmalloc's are. A free slot on a
// list holds its successor in its first word and the key in its second
// (every class is at least 16 bytes); the pop that hands it out clears both,
// on the line its caller writes next, so that a new object never shows a
// stale link into the heap (which a conservative scan of it would follow).
//
// The key, odd and random per process, is what a free tests to catch a
// second free cheaply: a live object holds it only if the program copied it
// out of a freed one. A slot given back to its span keeps it, so a second
// free of a slot in the central list is caught too (its live bit is clear).
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
inline void ClearFreeKey(void* slot) { __atomic_store_n(static_cast<uint64_t*>(slot) + 1, uint64_t{0}, __ATOMIC_RELAXED); }
// What a slot handed out holds in its first 16 bytes: zeros.
inline void ClearLinks(void* slot) {
  SetNextFree(slot, nullptr);
  ClearFreeKey(slot);
}

}  // namespace libdump::internal
