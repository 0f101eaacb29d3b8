#include "debug_heap.h"

#include <cstdio>
#include <cstring>

#include "platform/env/env_var.h"
#include "fatal.h"
#include "lock.h"
#include "recent_frees.h"
#include "thread_cache.h"

namespace libdump::internal {

bool g_debug_heap = false;

void InitDebugHeap() {
  g_debug_heap = env::GetBool("LIBDUMP_DEBUG_HEAP", false);
  // The key must never read as poison, nor poison as the key.
  if (g_stacked_key == kPoisonWord) g_stacked_key ^= 2;
}

void Poison(void* p, size_t n) { std::memset(p, kPoisonByte, n); }

void CheckPoison(const void* p, size_t size, size_t from) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = from; i < size; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    if (w == kPoisonWord) continue;
    size_t at = i;
    while (b[at] == kPoisonByte) ++at;
    // One line, built without the heap; Fatal adds the slot's address.
    static char what[96];
    std::snprintf(what, sizeof what, "write after free (byte %zu of a freed %zu-byte slot)", at, size);
    Fatal(what, p);
  }
}

void PoisonRemoteFree(void* p, size_t size) {
  Poison(static_cast<char*>(p) + 8, size - 8);
  if (!HasStackedKey(p)) *static_cast<uint64_t*>(p) = kPoisonWord;
}

// In place of StackSlot's push (reached through ReturnSlot: the stacks'
// capacity is 0 for StackSlot): the class's stack is the quarantine, a ring
// once full. Counts stay exact: the new slot takes the evicted one's place
// (the push that counted the evicted slot's free now counts the new one's),
// and UnstackSlot counts the evicted slot's way to the bitmap as a free. A
// section: a stop waits until the evicted slot is off the stack and out of
// the bitmap's live bits together.
void DebugStackSlot(ThreadHeap* h, uint32_t c, void* p) {
  ClassCache& cc = h->cache[c];
  const size_t size = cc.slot_size;
  AllocatorSection section;
  Poison(static_cast<char*>(p) + 8, size - 8);
  const uint64_t recent = cc.recent.load(std::memory_order_relaxed);
  const uint32_t n = RecentHeight(recent);
  const uint32_t depth = c == 0 ? 0 : RecentDepth(static_cast<uint32_t>(size));
  if (n < depth) {
    h->recent[c].slot[n].store(reinterpret_cast<uintptr_t>(p), std::memory_order_relaxed);
    *static_cast<uint64_t*>(p) = g_stacked_key;
    cc.recent.store(recent + kRecentPush, std::memory_order_release);
    return;
  }
  if (depth == 0) {
    *static_cast<uint64_t*>(p) = kPoisonWord;
    UnstackSlot(h, p);
    return;
  }
  uint8_t& next = h->debug_evict[c];
  if (next >= depth) next = 0;
  void* victim = reinterpret_cast<void*>(h->recent[c].slot[next].load(std::memory_order_relaxed));
  if (!HasStackedKey(victim)) Fatal("write after free (the first word of a freed slot)", victim);
  CheckPoison(victim, size, 8);
  *static_cast<uint64_t*>(p) = g_stacked_key;
  h->recent[c].slot[next].store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
  next = static_cast<uint8_t>(next + 1u == depth ? 0 : next + 1);
  *static_cast<uint64_t*>(victim) = kPoisonWord;
  UnstackSlot(h, victim);
}

}  // namespace libdump::internal
