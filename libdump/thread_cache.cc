#include "thread_cache.h"

#include <new>

#include "allocator_state.h"
#include "arena.h"
#include "central_freelist.h"
#include "debug_heap.h"
#include "fatal.h"
#include "lock.h"
#include "page_heap.h"
#include "page_map.h"

namespace libdump::internal {

constinit thread_local ThreadHeap* t_heap __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// Set once the thread's heap is detached at exit: frees made later (libc's
// own clean-up) must not attach a heap that nothing would detach again.
constinit thread_local bool t_detached __attribute__((tls_model("initial-exec"))) = false;

SpinLock g_heaps_lock;                   // guards the pool and registry pushes
ThreadHeap* g_heap_pool = nullptr;
std::atomic<ThreadHeap*> g_all_heaps{nullptr};

// Reserves the free slots of word w for the cache. False if it has none.
bool LoadWord(ClassCache& cc, Span* s, uint32_t w) {
  const uint64_t free = ~s->bits[w].live.load(std::memory_order_relaxed) & s->ValidMask(w);
  if (free == 0) return false;
  cc.mallocs_base.store(cc.mallocs_base.load(std::memory_order_relaxed) + CountBits(free), std::memory_order_relaxed);
  cc.free_bits.store(free, std::memory_order_relaxed);
  cc.word_base = s->SlotAddress(w * 64);
  cc.live_word = &s->bits[w].live;
  s->used += CountBits(free);
  return true;
}

Span* NewSmallSpan(ThreadHeap* h, int c) {
  const ClassInfo& ci = g_classes[c];
  LockGuard g(g_page_heap.mutex());
  Span* s = g_page_heap.Alloc(ci.npages);
  if (s == nullptr) return nullptr;
  s->size_class = static_cast<uint8_t>(c);
  s->slot_size = ci.size;
  s->nslots = ci.nslots;
  s->div_magic = ci.div_magic;
  s->used = 0;
  s->slow_at = 1;
  s->remote_pending.store(0, std::memory_order_relaxed);
  for (uint32_t w = 0; w < kBitmapWords; ++w) {
    s->bits[w].live.store(0, std::memory_order_relaxed);
    s->remote[w].store(0, std::memory_order_relaxed);
    s->bits[w].annotated.store(0, std::memory_order_relaxed);
    s->sampled[w].store(0, std::memory_order_relaxed);
  }
  s->sample_slot.store(0, std::memory_order_relaxed);
  s->owner.store(h, std::memory_order_relaxed);
  s->state = SpanState::kSmall;
  if (g_debug_heap) Poison(reinterpret_cast<void*>(s->start), size_t{s->nslots} * s->slot_size);
  return s;
}

// A span on the full list becomes worth allocating from again once an eighth
// of it is free.
uint32_t FullThreshold(const Span* s) { return s->nslots - (s->nslots + 7) / 8; }

// The owner's two lists of spans it is not allocating from. A full span
// comes back once an eighth of it is free; a partial one is given back when
// it empties (slow_at 1).
void PushFull(ThreadHeap* h, Span* s) {
  s->list = SpanList::kFull;
  s->slow_at = FullThreshold(s);
  h->full[s->size_class].PushFront(s);
}
void PushPartial(ThreadHeap* h, Span* s) {
  s->list = SpanList::kPartial;
  s->slow_at = 1;
  h->partial[s->size_class].PushFront(s);
}

// A span of the class with a free slot, owned by h, in no list.
Span* FindSpan(ThreadHeap* h, int c) {
  if (Span* s = h->partial[c].PopFront()) return s;
  if (h->remote_hint[c].load(std::memory_order_relaxed) != 0) {
    h->remote_hint[c].store(0, std::memory_order_relaxed);
    for (Span* s = h->full[c].front(); s != nullptr;) {
      Span* next = s->next;
      if (s->remote_pending.load(std::memory_order_relaxed) != 0) {
        CollectRemote(s);
        if (s->used <= s->slow_at) {
          h->full[c].Remove(s);
          if (s->used == 0) {
            s->slow_at = 1;
            AllocatorSection section;
            ReleaseSmallSpan(s);
          } else {
            PushPartial(h, s);
          }
        }
      }
      s = next;
    }
    if (Span* s = h->partial[c].PopFront()) return s;
  }
  AllocatorSection section;
  if (Span* s = Adopt(h, c)) return s;
  return NewSmallSpan(h, c);
}

}  // namespace

void File(ThreadHeap* h, Span* s) {
  if (s->used > FullThreshold(s)) {
    PushFull(h, s);
  } else {
    PushPartial(h, s);
  }
}

namespace {

// Gives up a span the heap no longer wants to own.
void Dispose(Span* s) {
  CollectRemote(s, /*force=*/true);
  s->slow_at = 1;
  if (s->used == 0) {
    ReleaseSmallSpan(s);
  } else {
    Abandon(s);
  }
}

// Clears the annotations of slots that are no longer live (m: annotated bits
// of word w). The caller writes the span's annotation words (SlotBits).
__attribute__((noinline)) void ClearAnnotations(Span* s, uint32_t w, uint64_t m) {
  if (SpanExtra* e = s->extra.load(std::memory_order_relaxed)) {
    if (const uint64_t typed = e->typed[w].load(std::memory_order_relaxed) & m) {
      for (uint64_t t = typed; t != 0; t &= t - 1) {
        const uint32_t i = w * 64 + static_cast<uint32_t>(__builtin_ctzll(t));
        e->type_id[i].store(0, std::memory_order_relaxed);
        e->count[i].store(0, std::memory_order_relaxed);
      }
      ClearBits(e->typed[w], typed);
    }
  }
  ClearBits(s->sampled[w], m);
  ClearBits(s->bits[w].annotated, m);
}

// A sampled slot's free is reported to the profiler at the free, by the
// freeing thread (for a remote free, before the owner clears the bits). The
// acquire pairs with the release that set the annotation.
inline void NotifyIfSampled(Span* s, uint32_t i) {
  const uint64_t m = uint64_t{1} << (i & 63);
  if ((s->bits[i >> 6].annotated.load(std::memory_order_acquire) & m) &&
      (s->sampled[i >> 6].load(std::memory_order_relaxed) & m)) {
    NotifySampledFree(s, i + 1, reinterpret_cast<void*>(s->SlotAddress(i)), s->slot_size);
  }
}

}  // namespace

namespace {

// A slot another thread freed while it sat on its owner's stack of recent
// frees is a second free: its key is still there. The owner checks it as it
// folds the free in, on a line it wrote last; the freeing thread's read of
// it (the first design) fetched the line from the owner's core at every
// remote free (94 % of RemoteFree's samples on remote_mix).
void CheckRemoteFrees(const Span* s, uint32_t w, uint64_t r) {
  const ThreadHeap* owner = s->owner.load(std::memory_order_relaxed);
  for (uint64_t t = r; t != 0; t &= t - 1) {
    void* slot = reinterpret_cast<void*>(s->SlotAddress(w * 64 + static_cast<uint32_t>(__builtin_ctzll(t))));
    if (!HasStackedKey(slot)) {
      // Poisoned by the freeing thread: written since, it was used after its free.
      if (LIBDUMP_UNLIKELY(g_debug_heap)) CheckPoison(slot, s->slot_size, 0);
      continue;
    }
    if (owner != nullptr) {
      const RecentRow& row = owner->recent[s->size_class];
      const uint32_t n = RecentHeight(owner->cache[s->size_class].recent.load(std::memory_order_relaxed));
      for (uint32_t k = 0; k < n; ++k) {
        if (row.slot[k].load(std::memory_order_relaxed) == reinterpret_cast<uintptr_t>(slot)) Fatal("double free", slot);
      }
    }
    // The object held the key: a free slot keeps none.
    if (g_debug_heap) {
      *static_cast<uint64_t*>(slot) = kPoisonWord;
    } else {
      ClearStackedKey(slot);
    }
  }
}

}  // namespace

void CollectRemote(Span* s, bool force) {
  if (!force && s->remote_pending.load(std::memory_order_relaxed) == 0) return;
  s->remote_pending.exchange(0, std::memory_order_acquire);
  for (uint32_t w = 0; w < s->nwords(); ++w) {
    const uint64_t r = s->remote[w].load(std::memory_order_acquire);
    if (r == 0) continue;
    CheckRemoteFrees(s, w, r);
    if (const uint64_t a = s->bits[w].annotated.load(std::memory_order_relaxed) & r) ClearAnnotations(s, w, a);
    // Clear live before remote: a concurrent walk sees the slot free at
    // every step (live & ~remote is 0 throughout).
    ClearBits(s->bits[w].live, r, std::memory_order_release);
    s->remote[w].fetch_and(~r, std::memory_order_release);
    s->used -= CountBits(r);
  }
}

void CollectOwnRemote(ThreadHeap* h, Span* s) {
  CollectRemote(s);
  if (s->list == SpanList::kFull && s->used <= s->slow_at) {
    h->full[s->size_class].Remove(s);
    PushPartial(h, s);
  }
}

bool Refill(ThreadHeap* h, int c) {
  ClassCache& cc = h->cache[c];
  if (Span* s = cc.span) {
    const auto word = static_cast<uint32_t>(reinterpret_cast<SlotBits*>(cc.live_word) - s->bits);
    for (uint32_t w = word + 1; w < s->nwords(); ++w) {
      if (LoadWord(cc, s, w)) return true;
    }
    // End of the span: slots freed behind the cursor are reused before
    // moving on, unless they are too few to be worth a pass.
    CollectRemote(s);
    if (s->used <= FullThreshold(s)) {
      for (uint32_t w = 0; w < s->nwords(); ++w) {
        if (LoadWord(cc, s, w)) return true;
      }
    }
    PushFull(h, s);
    cc.span = nullptr;
  }
  Span* s = FindSpan(h, c);
  if (s == nullptr) return false;
  s->list = SpanList::kCurrent;
  cc.span = s;
  CollectRemote(s);
  for (uint32_t w = 0; w < s->nwords(); ++w) {
    if (LoadWord(cc, s, w)) return true;
  }
  Fatal("span handed out without a free slot", reinterpret_cast<void*>(s->start));
}

namespace {

// Clears the live bit of the owner's slot at a (found through the page map,
// so that the fast paths need not keep the span); returns its span.
Span* ClearLive(uintptr_t a) {
  Span* s = g_page_map.Get(a);
  const uint32_t i = s->SlotIndex(a);
  ClearBits(s->bits[i >> 6].live, uint64_t{1} << (i & 63), std::memory_order_release);
  return s;
}

// A local free's bookkeeping once the slot's live bit is clear.
void Unreserve(ThreadHeap* h, Span* s) {
  --s->used;
  const int c = s->size_class;
  auto& frees = h->cache[c].frees;
  frees.store(frees.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (s->list == SpanList::kFull && s->used <= s->slow_at) {
    h->full[c].Remove(s);
    PushPartial(h, s);
  }
  if (s->used == 0 && s->list == SpanList::kPartial) {
    h->partial[c].Remove(s);
    AllocatorSection section;
    ReleaseSmallSpan(s);
  }
}

}  // namespace

bool PrepareLocalFree(Span* s, uint32_t i) {
  const uint64_t m = uint64_t{1} << (i & 63);
  // The remote word, on its own line, only while remote frees are pending,
  // as on the fast path (Span::remote_pending).
  if (!(s->bits[i >> 6].live.load(std::memory_order_relaxed) & m) ||
      (s->remote_pending.load(std::memory_order_relaxed) != 0 &&
       (s->remote[i >> 6].load(std::memory_order_relaxed) & m))) {
    return false;
  }
  if (s->bits[i >> 6].annotated.load(std::memory_order_relaxed) & m) {
    NotifyIfSampled(s, i);
    ClearAnnotations(s, i >> 6, m);
  }
  return true;
}

void LocalFree(ThreadHeap* h, Span* s, uint32_t i) {
  if (!PrepareLocalFree(s, i)) Fatal("double free", reinterpret_cast<void*>(s->SlotAddress(i)));
  if (g_debug_heap) Poison(reinterpret_cast<void*>(s->SlotAddress(i)), s->slot_size);
  ClearBits(s->bits[i >> 6].live, uint64_t{1} << (i & 63), std::memory_order_release);
  Unreserve(h, s);
}

void ReturnSlot(ThreadHeap* h, void* p) {
  if (LIBDUMP_UNLIKELY(g_debug_heap)) return DebugStackSlot(h, g_page_map.Get(reinterpret_cast<uintptr_t>(p))->size_class, p);
  UnstackSlot(h, p);
}

void UnstackSlot(ThreadHeap* h, void* p) { Unreserve(h, ClearLive(reinterpret_cast<uintptr_t>(p))); }

namespace {

// The remote free of a sampled or typed slot, or by a thread without a heap.
__attribute__((noinline)) void RemoteFreeSlow(ThreadHeap* h, Span* s, uint32_t i) {
  // The annotations stay until the owner collects the free (SlotBits).
  NotifyIfSampled(s, i);
  const int c = s->size_class;
  // A thread that only frees (a consumer) gets a heap too, for its batches.
  if (h == nullptr && !t_detached) h = AttachHeap();
  if (h != nullptr) {
    auto& frees = h->cache[c].frees;
    frees.store(frees.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    BatchRemoteFree(h->batches, s, i);
  } else {
    CountHeaplessFree(g_classes[c].size);
    PublishRemote(s, i >> 6, uint64_t{1} << (i & 63));
  }
}

}  // namespace

void RemoteFree(ThreadHeap* h, Span* s, uint32_t i) {
  const uint64_t m = uint64_t{1} << (i & 63);
  // A slot on its owner's stack of recent frees (recent_frees.h) is told by
  // the owner when it collects this free (CheckRemoteFrees).
  if (!(s->bits[i >> 6].live.load(std::memory_order_acquire) & m) ||
      (s->remote[i >> 6].load(std::memory_order_relaxed) & m)) {
    Fatal("double free", reinterpret_cast<void*>(s->SlotAddress(i)));
  }
  if (LIBDUMP_UNLIKELY(g_debug_heap)) PoisonRemoteFree(reinterpret_cast<void*>(s->SlotAddress(i)), s->slot_size);
  // Rare cases out of line, so that this path saves no registers: ~20 of the
  // ~180 instructions a remote free cost went on that.
  if (LIBDUMP_UNLIKELY(h == nullptr || (s->bits[i >> 6].annotated.load(std::memory_order_acquire) & m))) {
    return RemoteFreeSlow(h, s, i);
  }
  auto& frees = h->cache[s->size_class].frees;
  frees.store(frees.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  BatchRemoteFree(h->batches, s, i);
}

void PublishRemote(Span* s, uint32_t w, uint64_t bits) {
  const uintptr_t base = s->SlotAddress(w * 64);
  const uint32_t slot_size = s->slot_size;
  // Announce, then publish: once a remote bit is set the owner may collect
  // it, find the span empty, release it and recycle its Span object, so
  // nothing of the span is touched after the fetch_or. An owner that collects
  // between the two steps misses these bits until the next announcement (or
  // until the span is disposed of, which collects unconditionally). The
  // announcement is a flag: a plain store when it is not already up saves
  // an atomic read-modify-write on a line the owner reads.
  if (s->remote_pending.load(std::memory_order_relaxed) == 0) {
    s->remote_pending.store(1, std::memory_order_release);
    if (ThreadHeap* owner = s->owner.load(std::memory_order_acquire)) {
      owner->remote_hint[s->size_class].store(1, std::memory_order_relaxed);
    }
  }
  if (const uint64_t twice = s->remote[w].fetch_or(bits, std::memory_order_acq_rel) & bits) {
    Fatal("double free", reinterpret_cast<void*>(base + static_cast<uintptr_t>(__builtin_ctzll(twice)) * slot_size));
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
      // Default-initialized: `ThreadHeap()` would zero `recent` first.
      h = new (MetaAlloc(sizeof(ThreadHeap))) ThreadHeap;
      for (int c = 0; c < kNumClasses; ++c) {
        h->cache[c].slot_size = g_classes[c].size;
        // 0 under the debug heap: every local free goes out of line
        // (ReturnSlot), which stacks the slot into its quarantine.
        h->cache[c].recent_depth = c == 0 || g_debug_heap ? 0 : RecentDepth(g_classes[c].size);
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
  AllocatorSection section;
  t_detached = true;
  FlushRemoteBatches(h->batches);
  DrainLargeCache(h->large_cache);
  for (int c = 1; c < kNumClasses; ++c) {
    ClassCache& cc = h->cache[c];
    // The stacked slots were counted as frees when pushed; they are dropped
    // without the pops that would count them as mallocs, and become free in
    // their spans' bitmaps, keys cleared.
    const uint64_t recent = cc.recent.load(std::memory_order_relaxed);
    for (uint32_t n = RecentHeight(recent); n != 0; --n) {
      // The bit before the key: FindObject, which asks the stacks only
      // about a slot holding the key, never finds this one live.
      const uintptr_t a = h->recent[c].slot[n - 1].load(std::memory_order_relaxed);
      --ClearLive(a)->used;
      if (g_debug_heap) {
        *reinterpret_cast<uint64_t*>(a) = kPoisonWord;
      } else {
        ClearStackedKey(reinterpret_cast<void*>(a));
      }
    }
    cc.mallocs_base.store(cc.mallocs_base.load(std::memory_order_relaxed) - RecentHeight(recent), std::memory_order_relaxed);
    cc.recent.store(recent - RecentHeight(recent), std::memory_order_release);
    if (Span* s = cc.span) {
      const uint32_t unused = CountBits(cc.free_bits.load(std::memory_order_relaxed));
      s->used -= unused;
      cc.mallocs_base.store(cc.mallocs_base.load(std::memory_order_relaxed) - unused, std::memory_order_relaxed);
      cc.free_bits.store(0, std::memory_order_relaxed);
      cc.span = nullptr;
      s->list = SpanList::kNone;
      Dispose(s);
    }
    while (Span* s = h->partial[c].PopFront()) Dispose(s);
    while (Span* s = h->full[c].PopFront()) Dispose(s);
    h->remote_hint[c].store(0, std::memory_order_relaxed);
  }
  LockGuard g(g_heaps_lock);
  h->next_free = g_heap_pool;
  g_heap_pool = h;
}

ThreadHeap* AllHeaps() { return g_all_heaps.load(std::memory_order_acquire); }

void HeapsForkPrepare() { g_heaps_lock.lock(); }
void HeapsForkParent() { g_heaps_lock.unlock(); }
void HeapsForkChild() { g_heaps_lock.ResetAfterFork(); }

}  // namespace libdump::internal
