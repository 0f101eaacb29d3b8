// Slow paths, large objects and the allocator's process-wide state.
#include "allocator.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "allocator_hooks.h"
#include "allocator_state.h"
#include "arena.h"
#include "central_freelist.h"
#include "fatal.h"
#include "lock.h"
#include "own_memory.h"
#include "page_heap.h"
#include "free_list.h"
#include "libdump/profiler.h"

// Provided by malloc_interpose.cc when libdump is the process's malloc:
// memory the dynamic loader allocated before libdump existed.
extern "C" void libdump_snapshot_preinit() __attribute__((weak));
extern "C" bool libdump_preinit_pointer(const void* p, size_t* readable) __attribute__((weak));
// libdump::capture's fork handlers for the loader's lock (capture/loader_fork.h).
extern "C" void libdump_install_loader_fork() __attribute__((weak));

namespace libdump::internal {

constinit thread_local int t_allocator_depth __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<void (*)()> g_section_exit_hook{nullptr};

namespace {

std::atomic<bool> g_initialized{false};
SpinLock g_init_lock;
pthread_key_t g_exit_key;
std::atomic<bool> g_atfork_registered{false};
std::atomic<int64_t> g_sample_interval{0};
std::atomic<const SampleHooks*> g_sample_hooks{nullptr};
std::atomic<uint64_t> g_heapless_frees{0};
std::atomic<uint64_t> g_heapless_free_bytes{0};
std::atomic<void (*)(size_t)> g_oom_hook{nullptr};
thread_local bool t_in_oom_hook __attribute__((tls_model("initial-exec"))) = false;

// The system gave no memory for a request of `size` bytes. Callers are
// outside every section, so the hook may stop the world; a request that fails
// inside the hook only fails.
void OutOfMemory(size_t size) {
  auto hook = g_oom_hook.load(std::memory_order_acquire);
  if (hook != nullptr && !t_in_oom_hook && t_allocator_depth == 0) {
    t_in_oom_hook = true;
    hook(size);
    t_in_oom_hook = false;
  }
  errno = ENOMEM;
}

void ThreadExit(void* arg) {
  ThreadHeap* h = static_cast<ThreadHeap*>(arg);
  DetachHeap(h);
  if (t_heap == h) t_heap = nullptr;
}

void ForkPrepare() {
  ++t_allocator_depth;
  HeapsForkPrepare();
  LockCentralLists();
  g_page_heap.mutex().lock();
  MetaForkPrepare();
}
void ForkParent() {
  MetaForkParent();
  g_page_heap.mutex().unlock();
  UnlockCentralLists();
  HeapsForkParent();
  // A stop that arrived during the fork waited for this section's end, as
  // it would for any other section's: the dump goes on at once.
  if (--t_allocator_depth == 0) {
    if (auto hook = g_section_exit_hook.load(std::memory_order_acquire)) hook();
  }
}
// Other threads' heaps stay attached to threads that do not exist in the
// child: their partly used spans are kept, never corrupted.
void ForkChild() {
  MetaForkChild();
  g_page_heap.mutex().ResetAfterFork();
  CentralForkChild();
  HeapsForkChild();
  --t_allocator_depth;
}

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

// getrandom, or (without entropy this early in boot) the clock and ASLR.
uint64_t NewFreeKey() {
  uint64_t k = 0;
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof k)) {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    k = Mix(static_cast<uint64_t>(t.tv_nsec) ^ reinterpret_cast<uintptr_t>(&k));
  }
  return k | 1;
}

// What sample_left holds under the debug heap: far enough below 0 that no
// sequence of charges brings it back up, and never reset there.
constexpr int64_t kDebugCountdown = INT64_MIN / 2;

int64_t NextSampleCountdown(ThreadHeap* h) {
  const int64_t interval = g_sample_interval.load(std::memory_order_relaxed);
  if (interval <= 0) return INT64_MAX;
  // An exponential distance makes each byte equally likely to be sampled
  // whatever came before it, which is what lets the profiler unbias a sample
  // of s bytes by 1/(1-exp(-s/interval)) (docs/sampling.md); a uniform
  // distance would not.
  return NextSampleDistance(&h->sample_rng, interval);
}

// Charges an allocation of `bytes` to h's sampling countdown: true when it is
// the one to sample (the countdown is then drawn again).
bool ChargeSample(ThreadHeap* h, uint64_t bytes) {
  int64_t& left = g_debug_heap ? h->debug_sample_left : h->sample_left;
  left -= static_cast<int64_t>(bytes);
  if (left >= 0) return false;
  left = NextSampleCountdown(h);
  return true;
}

// Each heap's generator starts from a hashed process-wide counter, once per
// attach: threads (and pooled heaps reused by new threads) never share a
// sequence of distances.
void SeedSampling(ThreadHeap* h) {
  static std::atomic<uint64_t> seed{0x9e3779b97f4a7c15ULL};
  h->sample_rng = Mix(seed.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed) ^
                      reinterpret_cast<uintptr_t>(h)) | 1;
}

// A slot's free takes the tagged fast path only if its first byte's page
// has a tag, so annotating a slot (which FreeUntagged must then test and
// clear) takes that page's tag away, and only that page's: the rest of the
// span keeps the fast path. The page gets its tag back when its last
// annotated slot is freed (RetagPage). Without that, a sample every 512 KiB
// and libdump's own typed objects left, in a long run, a quarter of
// bench_pprof_alloc's frees on the slow path, which reads the span's line,
// its bitmap words and the object (16 % of its time while sampling).
//
// Tags change under the class's central lock, and samples are marked under
// it. A typed allocation marks its slot without it (every object of a typed
// heap is annotated) and takes it only to untag a page it finds tagged. Why
// that is safe against a retag running meanwhile: the allocation sets its
// bit, fences, then reads `retagging` and the tag; the retag sets
// `retagging`, fences, scans the page's bits (and gives up on one), sets the
// tag, fences and scans again (untagging again on a bit), then clears
// `retagging`. By the fences either the retag's scans see the new bit or
// the allocation sees `retagging` set (it then takes the lock, which waits
// for the retag), or sees it cleared after the retag, with the retag's tag:
// no slot of a tagged page is ever handed out annotated.
uint32_t PageOfSlot(const Span* s, uint32_t i) {
  return static_cast<uint32_t>((s->SlotAddress(i) - s->start) >> kPageShift);
}

// Whether a slot that starts on page `page` of s is annotated.
bool PageHasAnnotated(const Span* s, uint32_t page) {
  const uintptr_t from = s->start + (uintptr_t{page} << kPageShift);
  const uint32_t first = page == 0 ? 0 : s->SlotIndex(from - 1) + 1;
  uint32_t last = s->SlotIndex(from + kPageSize - 1);
  if (last >= s->nslots) last = s->nslots - 1;
  for (uint32_t w = first >> 6; w <= last >> 6; ++w) {
    uint64_t mask = ~uint64_t{0};
    if (w == first >> 6) mask &= ~uint64_t{0} << (first & 63);
    if (w == last >> 6) mask &= ~uint64_t{0} >> (63 - (last & 63));
    if (s->bits[w].annotated.load(std::memory_order_relaxed) & mask) return true;
  }
  return false;
}

void RetagPage(Span* s, uint32_t page) {
  if (s->own) return;  // libdump's own spans have no tags
  // Most frees of a typed heap's objects leave others on their page.
  if (PageHasAnnotated(s, page)) return;
  AllocatorSection section;
  LockGuard g(CentralLock(s->size_class));
  s->retagging.store(true, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!PageHasAnnotated(s, page)) {
    g_page_map.SetTag(s->start, page, s->size_class);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (PageHasAnnotated(s, page)) g_page_map.SetTag(s->start, page, 0);
  }
  s->retagging.store(false, std::memory_order_release);
}

// The thread that samples p claims the span's token place if it is empty
// (Span::sample_slot); a thread freeing the kept object only empties it.
void MarkSampled(void* p, size_t size) {
  Span* s = g_page_map.Get(reinterpret_cast<uintptr_t>(p));
  uint32_t slot = 1;
  if (s->state == SpanState::kLarge) {
    s->large_sampled.store(true, std::memory_order_relaxed);
  } else {
    const uint32_t i = s->SlotIndex(reinterpret_cast<uintptr_t>(p));
    const uint64_t m = uint64_t{1} << (i & 63);
    AllocatorSection section;
    LockGuard g(CentralLock(s->size_class));
    s->sampled[i >> 6].fetch_or(m, std::memory_order_relaxed);
    s->bits[i >> 6].annotated.fetch_or(m, std::memory_order_release);
    g_page_map.SetTag(s->start, PageOfSlot(s, i), 0);
    slot = i + 1;
  }
  const SampleHooks* hooks = g_sample_hooks.load(std::memory_order_acquire);
  if (hooks == nullptr) return;
  uint32_t empty = 0;
  const bool keep = s->sample_slot.load(std::memory_order_relaxed) == 0 &&
                    s->sample_slot.compare_exchange_strong(empty, kSampleSlotBusy, std::memory_order_acquire);
  const uintptr_t token = hooks->allocated(p, size, keep);
  if (keep) {
    s->sample_token.store(token, std::memory_order_relaxed);
    s->sample_slot.store(slot, std::memory_order_release);
  }
}

void* AllocateLarge(ThreadHeap* h, size_t size, size_t align) {
  if (size > (size_t{1} << 46)) {
    errno = ENOMEM;
    return nullptr;
  }
  const size_t npages = (size + kPageSize - 1) >> kPageShift;
  const size_t align_pages = align > kPageSize ? align >> kPageShift : 1;
  Span* s = align_pages == 1 ? TakeCachedLarge(h->large_cache, npages) : nullptr;
  if (s != nullptr) {
    // Out of the thread's cache (large_cache.h): its annotations were the
    // previous object's, and its pages are not zero.
    s->large_type_id.store(0, std::memory_order_relaxed);
    s->large_count.store(0, std::memory_order_relaxed);
    s->large_sampled.store(false, std::memory_order_relaxed);
    s->sample_slot.store(0, std::memory_order_relaxed);
    s->zeroed = false;
    // From here the walk reports the object.
    s->large_free.store(false, std::memory_order_release);
  } else {
    AllocatorSection section;
    LockGuard g(g_page_heap.mutex());
    s = g_page_heap.AllocAligned(npages, align_pages);
    if (s != nullptr) {
      s->slot_size = 0;
      s->nslots = 1;
      s->large_type_id.store(0, std::memory_order_relaxed);
      s->large_count.store(0, std::memory_order_relaxed);
      s->large_sampled.store(false, std::memory_order_relaxed);
      s->sample_slot.store(0, std::memory_order_relaxed);
      s->large_free.store(false, std::memory_order_relaxed);
      s->state = SpanState::kLarge;
    }
  }
  if (s == nullptr) {
    OutOfMemory(size);
    return nullptr;
  }
  const uint64_t bytes = uint64_t{npages} << kPageShift;
  h->large_mallocs.fetch_add(1, std::memory_order_relaxed);
  h->large_bytes_allocated.fetch_add(bytes, std::memory_order_relaxed);
  void* p = reinterpret_cast<void*>(s->start);
  if (ChargeSample(h, bytes)) MarkSampled(p, bytes);
  return p;
}

void FreeLarge(ThreadHeap* h, Span* s, void* p) {
  const uint64_t bytes = uint64_t{s->npages} << kPageShift;
  // From here the walk skips the object. The exchange also catches a second
  // free of an object in a thread's cache of large spans, or racing this one.
  if (s->large_free.exchange(true, std::memory_order_acq_rel)) Fatal("double free", p);
  if (s->large_sampled.load(std::memory_order_relaxed)) NotifySampledFree(s, 1, p, bytes);
  if (h != nullptr && PutCachedLarge(h->large_cache, s)) {
    // Kept whole for this thread's next large malloc of its size, off the
    // page heap's lock (large_cache.h).
  } else {
    AllocatorSection section;
    LockGuard g(g_page_heap.mutex());
    // Re-checked under the lock: two racing frees of one object.
    if (g_page_map.Get(reinterpret_cast<uintptr_t>(p)) != s || s->state != SpanState::kLarge) {
      Fatal("double free", p);
    }
    g_page_heap.Free(s);
  }
  if (h != nullptr) {
    h->large_frees.fetch_add(1, std::memory_order_relaxed);
    h->large_bytes_freed.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    g_heapless_frees.fetch_add(1, std::memory_order_relaxed);
    g_heapless_free_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
}

// A pointer no arena holds: the loader's, from before libdump, or misuse.
bool IsPreinit(const void* p, size_t* readable) {
  EnsureInitialized();
  return libdump_preinit_pointer != nullptr && libdump_preinit_pointer(p, readable);
}

bool InArena(uintptr_t p) {
  for (size_t i = 0; i < g_arenas.count(); ++i) {
    if (p >= g_arenas.at(i).start && p < g_arenas.at(i).end) return true;
  }
  return false;
}

}  // namespace

void EnsureInitialized() {
  if (LIBDUMP_LIKELY(g_initialized.load(std::memory_order_acquire))) return;
  LockGuard g(g_init_lock);
  if (g_initialized.load(std::memory_order_relaxed)) return;
  if (libdump_snapshot_preinit != nullptr) libdump_snapshot_preinit();
  if (pthread_key_create(&g_exit_key, ThreadExit) != 0) Fatal("cannot create the thread-exit key", nullptr);
  g_free_key = NewFreeKey();
  InitDebugHeap();
  g_initialized.store(true, std::memory_order_release);
}

void OnHeapAttached(ThreadHeap* h) {
  pthread_setspecific(g_exit_key, h);
  // pthread_atfork allocates: registered only once this thread has a heap.
  if (!g_atfork_registered.exchange(true, std::memory_order_acq_rel)) {
    // The loader's first: its child handler then runs before every other,
    // so none finds the module-list lock held (capture/loader_fork.h).
    if (libdump_install_loader_fork != nullptr) libdump_install_loader_fork();
    pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  }
}

int64_t FirstSampleCountdown(ThreadHeap* h) {
  SeedSampling(h);
  if (g_debug_heap) {
    h->debug_sample_left = NextSampleCountdown(h);
    return kDebugCountdown;
  }
  return NextSampleCountdown(h);
}

void NotifySampledFree(Span* s, uint32_t slot, void* p, size_t size) {
  if (s->sample_slot.load(std::memory_order_acquire) == slot) {
    const uintptr_t token = s->sample_token.load(std::memory_order_relaxed);
    s->sample_slot.store(0, std::memory_order_release);
    CountKeptSampleFree(token);
    return;
  }
  if (const SampleHooks* hooks = g_sample_hooks.load(std::memory_order_acquire)) hooks->freed(p, size);
}

void CountHeaplessFree(size_t bytes) {
  g_heapless_frees.fetch_add(1, std::memory_order_relaxed);
  g_heapless_free_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

uint64_t HeaplessFrees() { return g_heapless_frees.load(std::memory_order_relaxed); }
uint64_t HeaplessFreeBytes() { return g_heapless_free_bytes.load(std::memory_order_relaxed); }

SpanExtra* AnnotateSlot(Span* s, uint32_t i) {
  const uint64_t m = uint64_t{1} << (i & 63);
  const uint32_t page = PageOfSlot(s, i);
  SpanExtra* e = s->extra.load(std::memory_order_acquire);
  if (LIBDUMP_LIKELY(e != nullptr)) {
    // The order that a retag relies on (above RetagPage).
    s->bits[i >> 6].annotated.fetch_or(m, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (LIBDUMP_LIKELY(!s->retagging.load(std::memory_order_acquire) &&
                       g_page_map.Tag(s->start + (uintptr_t{page} << kPageShift)) == 0)) {
      return e;
    }
  }
  AllocatorSection section;
  LockGuard g(CentralLock(s->size_class));
  e = s->extra.load(std::memory_order_relaxed);
  if (e == nullptr) {
    LockGuard p(g_page_heap.mutex());
    e = g_page_heap.NewExtra();
    s->extra.store(e, std::memory_order_release);
  }
  s->bits[i >> 6].annotated.fetch_or(m, std::memory_order_release);
  g_page_map.SetTag(s->start, page, 0);
  return e;
}

size_t SlotSize(const Span* s) {
  return s->state == SpanState::kLarge ? size_t{s->npages} << kPageShift : s->slot_size;
}

void* AllocateSlow(size_t size) {
  // libdump's own allocation (own_memory.h): typed as its component's.
  if (LIBDUMP_UNLIKELY(t_own_component != OwnComponent::kNone)) return AllocateOwn(size);
  ThreadHeap* h = t_heap;
  // Attached first: AttachHeap initializes the allocator, g_debug_heap among
  // it, and its acquire is what orders the flag's read after that write.
  if (h == nullptr) h = AttachHeap();
  if (LIBDUMP_UNLIKELY(g_debug_heap)) return DebugAllocate(size);
  if (size > kMaxSmallSize) return AllocateLarge(h, size, 1);
  const int c = SizeToClass(size);
  ClassCache& cc = h->cache[c];
  void* p = PopOrRefill(h, cc, c);
  if (p == nullptr) {
    OutOfMemory(size);
    return nullptr;
  }
  // ChargeSample: the heap's first allocation gets here with the debug heap
  // just switched on by AttachHeap.
  if (ChargeSample(h, cc.slot_size)) MarkSampled(p, cc.slot_size);
  return p;
}

// The debug heap's malloc (debug_heap.h): a list holds only what the
// central list gave it (frees go to the quarantine), checked before it goes.
void* DebugAllocate(size_t size) {
  ThreadHeap* h = t_heap;
  if (h == nullptr) h = AttachHeap();
  if (size > kMaxSmallSize) return AllocateLarge(h, size, 1);
  const int c = SizeToClass(size);
  ClassCache& cc = h->cache[c];
  void* p = PopOrRefill(h, cc, c);
  if (p == nullptr) {
    OutOfMemory(size);
    return nullptr;
  }
  // Only the central list fills a list under the debug heap: past its link
  // and key (which the pop zeroed), the slot holds the poison its span gave
  // it.
  CheckPoison(p, cc.slot_size, 16);
  Poison(p, 16);
  if (ChargeSample(h, cc.slot_size)) MarkSampled(p, cc.slot_size);
  return p;
}

// flatten: the distance and the marks inline, one frame on stack lines the
// program has evicted rather than three.
__attribute__((flatten)) void* AllocateSampled(size_t size, ThreadHeap* h, int c) {
  // Where a thread inside libdump's own work is sent (own_memory.h).
  if (LIBDUMP_UNLIKELY(t_own_component != OwnComponent::kNone)) return AllocateOwn(size);
  if (LIBDUMP_UNLIKELY(g_debug_heap)) return DebugAllocate(size);
  ClassCache& cc = h->cache[c];
  void* p = PopOrRefill(h, cc, c);
  if (p == nullptr) {
    OutOfMemory(size);
    return nullptr;
  }
  h->sample_left = NextSampleCountdown(h);
  MarkSampled(p, cc.slot_size);
  return p;
}

namespace {

// Clears the annotations of slot i, which is being freed. Other threads
// hold other slots of the word: atomic read-modify-writes (SlotBits).
__attribute__((noinline)) void ClearAnnotations(Span* s, uint32_t i) {
  const uint32_t w = i >> 6;
  const uint64_t m = uint64_t{1} << (i & 63);
  if ((s->sampled[w].load(std::memory_order_relaxed) & m) != 0) {
    NotifySampledFree(s, i + 1, reinterpret_cast<void*>(s->SlotAddress(i)), s->slot_size);
    s->sampled[w].fetch_and(~m, std::memory_order_relaxed);
  }
  if (SpanExtra* e = s->extra.load(std::memory_order_acquire)) {
    if (e->typed[w].load(std::memory_order_relaxed) & m) {
      e->type_id[i].store(0, std::memory_order_relaxed);
      e->count[i].store(0, std::memory_order_relaxed);
      e->typed[w].fetch_and(~m, std::memory_order_relaxed);
    }
  }
  s->bits[w].annotated.fetch_and(~m, std::memory_order_release);
  RetagPage(s, PageOfSlot(s, i));
}

// Checks a free of slot p of small span s (its index i) that the fast path
// sent here, and clears its annotations. Fatal on misuse.
void CheckedFree(ThreadHeap* h, Span* s, void* ptr, uint32_t i) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  // Bounded by the bitmap's size, not by nslots, whose line a sampled free
  // would otherwise miss on: an index past nslots has no live bit, and is
  // told apart below only to name the error.
  if (i >= kMaxSlotsPerSpan || s->SlotAddress(i) != p) Fatal("free of a pointer inside an object", ptr);
  const uint64_t m = uint64_t{1} << (i & 63);
  if ((s->bits[i >> 6].live.load(std::memory_order_acquire) & m) == 0) {
    Fatal(i >= s->nslots ? "free of a pointer inside an object" : "double free", ptr);
  }
  // The key: most likely a slot freed already, on this thread's list or in
  // its quarantine, or in a transfer batch (a slot back in its span has
  // neither the key nor its live bit, re-read under the lock). If none of
  // them has it, it is on another thread's list (a second free this check
  // does not catch, as tcmalloc's does not) or the object held the key:
  // cleared, so that the slot's next free is not taken for a second one.
  if (HasFreeKey(ptr)) {
    const int c = s->size_class;
    if (h != nullptr && (OnList(h, c, ptr) || (g_debug_heap && InQuarantine(h, c, ptr)))) Fatal("double free", ptr);
    {
      AllocatorSection section;
      LockGuard g(CentralLock(c));
      if (InTransferCache(c, ptr) || (s->bits[i >> 6].live.load(std::memory_order_relaxed) & m) == 0) {
        Fatal("double free", ptr);
      }
    }
    ClearFreeKey(ptr);
  }
  if ((s->bits[i >> 6].annotated.load(std::memory_order_acquire) & m) != 0) ClearAnnotations(s, i);
}

// A slot of libdump's own spans goes back to its span, never to a list.
void FreeOwn(Span* s, void* ptr) {
  CheckedFree(nullptr, s, ptr, s->SlotIndex(reinterpret_cast<uintptr_t>(ptr)));
  OwnGive(s->size_class, ptr);
}

}  // namespace

void* AllocateOwnSlot(size_t size, uint32_t type_id) {
  void* p;
  {
    AllocatorSection section;
    p = OwnTake(SizeToClass(size));
    if (p != nullptr) TypeNewObject(p, size, type_id, 1);
  }
  if (p == nullptr) OutOfMemory(size);
  return p;
}

void ListSlotWithoutKey(void* p) {
  Fatal(KeyWord(p) == 0 ? "double free" : "double free (or a write after free)", p);
}

void FreeUntagged(void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  Span* s = g_page_map.Get(p);
  ThreadHeap* h = t_heap;
  if (LIBDUMP_UNLIKELY(s == nullptr || h == nullptr || s->state != SpanState::kSmall)) return FreeSlow(ptr, s);
  if (LIBDUMP_UNLIKELY(s->own)) return FreeOwn(s, ptr);
  // A slot of an untagged page: only its annotated slots need the checks'
  // path, which clears their annotations. As on the tagged path, nothing of
  // the object is read (its key was the one miss of this path's frees of a
  // sampled slot's neighbours); a second free is caught where free_list.h
  // says.
  const uint32_t i = s->SlotIndex(p);
  const uint64_t m = uint64_t{1} << (i & 63);
  const uint64_t live = s->bits[i >> 6].live.load(std::memory_order_relaxed);
  const uint64_t busy = s->bits[i >> 6].annotated.load(std::memory_order_relaxed);
  const uint32_t c = s->size_class;
  void* head = h->cache[c].head.load(std::memory_order_relaxed);
  if (LIBDUMP_LIKELY(s->SlotAddress(i) == p && (live & ~busy & m) != 0 && ptr != head)) {
    return PushList(h, c, ptr, head);
  }
  CheckedFree(h, s, ptr, i);
  PushList(h, s->size_class, ptr);
}

void* AllocateAlignedImpl(size_t align, size_t size) {
  if (align <= kMinAlign) return AllocateFast(size);
  if (align <= kPageSize) {
    // Power-of-two classes place every slot at a multiple of their size,
    // and spans start on page boundaries.
    size_t s = size > align ? size : align;
    s = size_t{1} << (64 - __builtin_clzll(s - 1));
    if (s <= kMaxSmallSize) return AllocateFast(s);
  }
  ThreadHeap* h = t_heap;
  if (h == nullptr) h = AttachHeap();
  // Zero bytes is a block of one page, as malloc(0) is a block.
  return AllocateLarge(h, size == 0 ? 1 : size, align);
}

void FreeSlow(void* ptr, Span* s) {
  if (ptr == nullptr) return;
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (s == nullptr) {
    size_t readable;
    if (IsPreinit(ptr, &readable)) return;  // the loader's: never reused, left alone
    if (InArena(p)) Fatal("double free (or free of memory never allocated)", ptr);
    Fatal("free of a pointer libdump did not allocate", ptr);
  }
  ThreadHeap* h = t_heap;
  switch (s->state) {
    case SpanState::kSmall: {
      if (s->own) return FreeOwn(s, ptr);
      // A thread that only frees (a consumer) gets a heap too, for its list;
      // one past its exit gives the slot straight back.
      if (h == nullptr && !HeapDetached()) h = AttachHeap();
      CheckedFree(h, s, ptr, s->SlotIndex(p));
      if (h != nullptr) return PushList(h, s->size_class, ptr);
      CountHeaplessFree(s->slot_size);
      AllocatorSection section;
      LockGuard g(CentralLock(s->size_class));
      if (g_debug_heap) Poison(ptr, s->slot_size);
      CentralGive(s->size_class, ptr, 1);
      return;
    }
    case SpanState::kLarge:
      if (p != s->start) Fatal("free of a pointer inside an object", ptr);
      FreeLarge(h, s, ptr);
      return;
    case SpanState::kFree:
      break;
  }
  Fatal("double free (or free of memory never allocated)", ptr);
}

size_t UsableSizeImpl(const void* ptr) {
  if (ptr == nullptr) return 0;
  Span* s = g_page_map.Get(reinterpret_cast<uintptr_t>(ptr));
  if (s == nullptr || s->state == SpanState::kFree) {
    size_t readable;
    if (IsPreinit(ptr, &readable)) return 0;
    Fatal("malloc_usable_size of a pointer libdump did not allocate", ptr);
  }
  return SlotSize(s);
}

void* ReallocateImpl(void* ptr, size_t size) {
  if (ptr == nullptr) return AllocateFast(size);
  if (size == 0) {  // glibc's behaviour, which programs rely on
    FreeFast(ptr);
    return nullptr;
  }
  Span* s = g_page_map.Get(reinterpret_cast<uintptr_t>(ptr));
  size_t old;
  bool preinit = false;
  if (s == nullptr || s->state == SpanState::kFree) {
    if (!IsPreinit(ptr, &old)) Fatal("realloc of a pointer libdump did not allocate", ptr);
    preinit = true;
  } else {
    old = SlotSize(s);
    // Shrinking by less than half keeps the object where it is.
    if (size <= old && size >= old / 2) return ptr;
  }
  void* q = AllocateFast(size);
  if (q == nullptr) return nullptr;
  memcpy(q, ptr, size < old ? size : old);
  if (!preinit) FreeFast(ptr);
  return q;
}

void SetSectionExitHook(void (*hook)()) { g_section_exit_hook.store(hook, std::memory_order_release); }
void SetSampleHooks(const SampleHooks* hooks) { g_sample_hooks.store(hooks, std::memory_order_release); }
void SetOutOfMemoryHook(void (*hook)(size_t)) { g_oom_hook.store(hook, std::memory_order_release); }

}  // namespace libdump::internal

namespace libdump {

using namespace internal;

void* Allocate(size_t size) { return AllocateFast(size); }

void* AllocateZeroed(size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  void* p = AllocateFast(total);
  if (p == nullptr) return nullptr;
  if (total > kMaxSmallSize) {
    // Large spans fresh from the OS (or from madvise) are zero already.
    if (g_page_map.Get(reinterpret_cast<uintptr_t>(p))->zeroed) return p;
  }
  memset(p, 0, total);
  return p;
}

void* AllocateAligned(size_t align, size_t size) { return AllocateAlignedImpl(align, size); }
void* Reallocate(void* p, size_t size) { return ReallocateImpl(p, size); }
void Free(void* p) { FreeFast(p); }
size_t UsableSize(const void* p) { return UsableSizeImpl(p); }

void SetSampleInterval(int64_t bytes) {
  g_sample_interval.store(bytes, std::memory_order_relaxed);
  if (ThreadHeap* h = t_heap) (g_debug_heap ? h->debug_sample_left : h->sample_left) = NextSampleCountdown(h);
}

bool IsSampled(const void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  Span* s = g_page_map.Get(p);
  if (s == nullptr) return false;
  if (s->state == SpanState::kLarge) return s->large_sampled.load(std::memory_order_relaxed);
  if (s->state != SpanState::kSmall) return false;
  const uint32_t i = s->SlotIndex(p);
  return (s->sampled[i >> 6].load(std::memory_order_relaxed) >> (i & 63)) & 1;
}

}  // namespace libdump
