#include "thread_cache.h"

#include <new>

#include "allocator_state.h"
#include "arena.h"
#include "central_freelist.h"
#include "debug_heap.h"
#include "fatal.h"
#include "lock.h"
#include "page_heap.h"

namespace libdump::internal {

constinit thread_local ThreadHeap* t_heap __attribute__((tls_model("initial-exec"))) = nullptr;
uint64_t g_free_key = 1;  // replaced at initialization (EnsureInitialized)

namespace {

// Set once the thread's heap is detached at exit: frees made later (libc's
// own clean-up) must not attach a heap that nothing would detach again.
constinit thread_local bool t_detached __attribute__((tls_model("initial-exec"))) = false;

SpinLock g_heaps_lock;  // guards the pool and registry pushes
ThreadHeap* g_heap_pool = nullptr;
std::atomic<ThreadHeap*> g_all_heaps{nullptr};

// Takes the first n slots off class c's list (n <= its length) and gives
// them back. The caller holds the class's central lock inside a section, so
// the slots are never between the two for a stopped or forked walk.
void GiveBack(ClassCache& cc, int c, uint32_t n, bool to_spans) {
  void* first = cc.head.load(std::memory_order_relaxed);
  void* last = first;
  for (uint32_t k = 1; k < n; ++k) last = NextFree(last);
  cc.head.store(NextFree(last), std::memory_order_relaxed);
  cc.list.store(cc.list.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  cc.returned.store(cc.returned.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  SetNextFree(last, nullptr);
  CentralGive(c, first, n, to_spans);
}

}  // namespace

bool RefillList(ThreadHeap* h, int c) {
  ClassCache& cc = h->cache[c];
  AllocatorSection section;
  LockGuard g(CentralLock(c));
  void* head = nullptr;
  const uint32_t n = CentralTake(c, cc.batch, &head);
  if (n == 0) return false;
  // The list is empty: the batch is the list.
  cc.fetched.store(cc.fetched.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  cc.head.store(head, std::memory_order_relaxed);
  cc.list.store(cc.list.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  return true;
}

void ShrinkList(ThreadHeap* h, int c) {
  // Every free comes here under the debug heap (max_length 0).
  if (LIBDUMP_UNLIKELY(g_debug_heap)) return Quarantine(h, c);
  ClassCache& cc = h->cache[c];
  AllocatorSection section;
  LockGuard g(CentralLock(c));
  const uint32_t n = ListLength(cc.list.load(std::memory_order_relaxed));
  GiveBack(cc, c, n < cc.batch ? n : cc.batch, /*to_spans=*/false);
}

bool OnList(const ThreadHeap* h, int c, const void* p) {
  const ClassCache& cc = h->cache[c];
  const void* q = cc.head.load(std::memory_order_relaxed);
  for (uint32_t n = ListLength(cc.list.load(std::memory_order_relaxed)); n != 0 && q != nullptr; --n, q = NextFree(q)) {
    if (q == p) return true;
  }
  return false;
}

void FlushLists(ThreadHeap* h) {
  for (int c = 1; c < kNumClasses; ++c) {
    ClassCache& cc = h->cache[c];
    if (ListLength(cc.list.load(std::memory_order_relaxed)) == 0) continue;
    AllocatorSection section;
    LockGuard g(CentralLock(c));
    while (const uint32_t n = ListLength(cc.list.load(std::memory_order_relaxed))) {
      GiveBack(cc, c, n, /*to_spans=*/true);
    }
  }
}

ThreadHeap* AttachHeap() {
  EnsureInitialized();
  ThreadHeap* h;
  {
    AllocatorSection section;
    LockGuard g(g_heaps_lock);
    h = g_heap_pool;
    if (h != nullptr) {
      g_heap_pool = h->next_free;
    } else {
      // Default-initialized: `ThreadHeap()` would zero the quarantine first.
      h = new (MetaAlloc(sizeof(ThreadHeap))) ThreadHeap;
      for (int c = 1; c < kNumClasses; ++c) {
        ClassCache& cc = h->cache[c];
        cc.slot_size = g_classes[c].size;
        cc.span_bytes = g_classes[c].span_bytes;
        cc.multiple_magic = g_classes[c].multiple_magic;
        cc.batch = BatchSlots(cc.slot_size);
        // 0 under the debug heap: every free goes out of line, into its
        // quarantine.
        cc.max_length = g_debug_heap ? 0 : 2 * cc.batch;
      }
      h->next_all = g_all_heaps.load(std::memory_order_relaxed);
      g_all_heaps.store(h, std::memory_order_release);
    }
  }
  h->sample_left = FirstSampleCountdown(h);
  t_heap = h;
  OnHeapAttached(h);
  return h;
}

void DetachHeap(ThreadHeap* h) {
  t_detached = true;
  FlushLists(h);
  if (g_debug_heap) DrainQuarantine(h);
  AllocatorSection section;
  DrainLargeCache(h->large_cache);
  LockGuard g(g_heaps_lock);
  h->next_free = g_heap_pool;
  g_heap_pool = h;
}

bool HeapDetached() { return t_detached; }

ThreadHeap* AllHeaps() { return g_all_heaps.load(std::memory_order_acquire); }

void HeapsForkPrepare() { g_heaps_lock.lock(); }
void HeapsForkParent() { g_heaps_lock.unlock(); }
void HeapsForkChild() { g_heaps_lock.ResetAfterFork(); }

}  // namespace libdump::internal
