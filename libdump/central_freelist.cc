#include "central_freelist.h"

#include "debug_heap.h"
#include "page_heap.h"
#include "span_remote.h"

namespace libdump::internal {

namespace {

struct alignas(64) OrphanList {
  SpinLock lock;
  SpanQueue spans;
};
constinit OrphanList g_orphans[kNumClasses];

// Bounds the work of one adoption; later adopters look further.
constexpr int kAdoptScan = 16;

}  // namespace

void ReleaseSmallSpan(Span* s) {
  // Every slot is free, so poisoned: the last chance to see a write after free.
  if (LIBDUMP_UNLIKELY(g_debug_heap)) {
    for (uint32_t i = 0; i < s->nslots; ++i) CheckPoison(reinterpret_cast<void*>(s->SlotAddress(i)), s->slot_size, 0);
  }
  LockGuard g(g_page_heap.mutex());
  if (SpanExtra* e = s->extra.load(std::memory_order_relaxed)) {
    s->extra.store(nullptr, std::memory_order_relaxed);
    g_page_heap.DeleteExtra(e);
  }
  g_page_heap.Free(s);
}

void Abandon(Span* s) {
  OrphanList& l = g_orphans[s->size_class];
  LockGuard g(l.lock);
  s->list = SpanList::kOrphan;
  s->owner.store(nullptr, std::memory_order_release);
  l.spans.PushFront(s);
}

Span* Adopt(ThreadHeap* h, int size_class) {
  OrphanList& l = g_orphans[size_class];
  LockGuard g(l.lock);
  Span* s = l.spans.front();
  for (int n = 0; s != nullptr && n < kAdoptScan; ++n) {
    Span* next = s->next;
    CollectRemote(s, /*force=*/true);
    if (s->used == 0) {
      l.spans.Remove(s);
      ReleaseSmallSpan(s);
    } else if (s->used < s->nslots) {
      l.spans.Remove(s);
      s->slow_at = 1;
      s->owner.store(h, std::memory_order_release);
      return s;
    }
    s = next;
  }
  return nullptr;
}

bool Reclaim(ThreadHeap* h, Span* s) {
  const int c = s->size_class;
  OrphanList& l = g_orphans[c];
  LockGuard g(l.lock);
  // Under its list's lock an orphan stays one. A span that no longer is
  // (adopted, released, or reused since the caller looked) is not this
  // list's to give.
  if (s->owner.load(std::memory_order_relaxed) != nullptr || s->state != SpanState::kSmall ||
      s->size_class != c || s->list != SpanList::kOrphan) {
    return false;
  }
  l.spans.Remove(s);
  CollectRemote(s, /*force=*/true);
  s->owner.store(h, std::memory_order_release);
  return true;
}

void CentralForkPrepare() {
  for (auto& l : g_orphans) l.lock.lock();
}
void CentralForkParent() {
  for (auto& l : g_orphans) l.lock.unlock();
}
void CentralForkChild() {
  for (auto& l : g_orphans) l.lock.ResetAfterFork();
}

}  // namespace libdump::internal
