#include "debug_heap.h"

#include <cstdio>
#include <cstring>

#include "platform/env/env_var.h"
#include "central_freelist.h"
#include "fatal.h"
#include "free_list.h"
#include "lock.h"
#include "page_map.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump::internal {

bool g_debug_heap = false;

void InitDebugHeap() {
  g_debug_heap = env::GetBool("LIBDUMP_DEBUG_HEAP", false);
  // The key must never read as poison, nor poison as the key.
  if (g_free_key == kPoisonWord) g_free_key ^= 2;
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

namespace {

// A slot out of the quarantine, checked, goes back to its span whole
// poisoned: the central list checks it again when it hands it out.
void Evict(ThreadHeap* h, int c, void* victim) {
  ClassCache& cc = h->cache[c];
  if (!HasFreeKey(victim)) Fatal("write after free (the key word of a freed slot)", victim);
  CheckPoison(victim, cc.slot_size, 16);
  Poison(victim, 16);
  cc.quarantined.store(cc.quarantined.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  cc.returned.store(cc.returned.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  LockGuard g(CentralLock(c));
  CentralGive(c, victim, 1);
}

}  // namespace

// The push that brought the slot here counted its free; taken off the list
// again, it is counted as quarantined instead of listed. A section: a stop
// waits until an evicted slot is out of the ring and back in its span.
void Quarantine(ThreadHeap* h, int c) {
  ClassCache& cc = h->cache[c];
  AllocatorSection section;
  void* p = cc.head.load(std::memory_order_relaxed);
  cc.head.store(NextFree(p), std::memory_order_relaxed);
  cc.list.store(cc.list.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  // Every second free is caught here: in the quarantine still, or back in
  // its span (its live bit clear).
  const Span* s = g_page_map.Get(reinterpret_cast<uintptr_t>(p));
  if (InQuarantine(h, c, p) || !s->SlotOut(s->SlotIndex(reinterpret_cast<uintptr_t>(p)))) Fatal("double free", p);
  Poison(static_cast<char*>(p) + 16, cc.slot_size - 16);
  *static_cast<uint64_t*>(p) = kPoisonWord;
  const uint32_t depth = QuarantineDepth(cc.slot_size);
  const uint32_t n = cc.quarantined.load(std::memory_order_relaxed);
  QuarantineRow& row = h->quarantine[c];
  if (n < depth) {
    row.slot[n].store(reinterpret_cast<uintptr_t>(p), std::memory_order_relaxed);
    cc.quarantined.store(n + 1, std::memory_order_release);
    return;
  }
  uint8_t& next = h->debug_evict[c];
  if (next >= depth) next = 0;
  void* victim = reinterpret_cast<void*>(row.slot[next].load(std::memory_order_relaxed));
  row.slot[next].store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
  next = static_cast<uint8_t>(next + 1u == depth ? 0 : next + 1);
  cc.quarantined.store(n + 1, std::memory_order_relaxed);
  Evict(h, c, victim);
}

bool InQuarantine(const ThreadHeap* h, int c, const void* p) {
  const uint32_t n = h->cache[c].quarantined.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < n && k < kQuarantineDepth; ++k) {
    if (h->quarantine[c].slot[k].load(std::memory_order_relaxed) == reinterpret_cast<uintptr_t>(p)) return true;
  }
  return false;
}

void DrainQuarantine(ThreadHeap* h) {
  AllocatorSection section;
  for (int c = 1; c < kNumClasses; ++c) {
    for (uint32_t n = h->cache[c].quarantined.load(std::memory_order_relaxed); n != 0; --n) {
      Evict(h, c, reinterpret_cast<void*>(h->quarantine[c].slot[n - 1].load(std::memory_order_relaxed)));
    }
    h->debug_evict[c] = 0;
  }
}

}  // namespace libdump::internal
