#include "samplers/heap/heap_bucket_table.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <new>

namespace libdump::samplers {

// Everything but the counts is written before the bucket is published (a
// release store of its chain's head) and never changed, so lookups need no
// lock. The counts are added to without it: a free's release and a
// snapshot's acquire load of `frees` before `allocs` keep frees <= allocs in
// every snapshot. A sample reads the first line only (Alloc aligns buckets
// to lines): the key it compares and the count it adds to. The stack is
// read when a profile or a dump is written.
struct HeapProfileTable::Bucket {
  Bucket* next;  // hash chain
  StackHash key;
  uint64_t size;
  int64_t rate;
  std::atomic<uint64_t> allocs;
  std::atomic<uint64_t> frees;
  uint32_t depth;
  Bucket* all;  // every bucket, for snapshots
  uintptr_t pcs[];  // depth entries
};

namespace {

void* MapOrDie(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

}  // namespace

// Two multiply chains, independent so that they run side by side. Each step
// of each is a bijection of its state, so stacks of one depth that differ in
// one frame never collide; stacks that differ otherwise collide in both with
// probability ~2^-128, far below anything a profile could show. So a sample
// compares the key, not the stack, which is on the bucket's second line.
HeapProfileTable::StackHash HeapProfileTable::Hash(uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth) {
  uint64_t h = 0xcbf29ce484222325ULL ^ size ^ (static_cast<uint64_t>(rate) << 32);
  uint64_t g = 0x6a09e667f3bcc909ULL ^ (size * 0x9e3779b97f4a7c15ULL) ^ static_cast<uint64_t>(rate);
  for (size_t i = 0; i < depth; ++i) {
    h = (h ^ pcs[i]) * 0x100000001b3ULL;
    g = (g + pcs[i]) * 0xc2b2ae3d27d4eb4fULL;
  }
  return {h ^ (h >> 29), g ^ (g >> 31)};
}

namespace {

uint64_t PtrHash(uintptr_t p) {
  uint64_t x = p * 0x9e3779b97f4a7c15ULL;
  return x ^ (x >> 31);
}

}  // namespace

uintptr_t HeapProfileTable::TokenOf(const Bucket* b) {
  static_assert(offsetof(Bucket, all) == 64, "a sample reads one line of its bucket");
  return reinterpret_cast<uintptr_t>(&b->frees);
}

const HeapProfileTable::Bucket* HeapProfileTable::BucketOf(uintptr_t token) {
  return reinterpret_cast<const Bucket*>(token - offsetof(Bucket, frees));
}

HeapEstimate Unbias(const HeapBucketSnapshot& b) {
  double scale = 1;
  // rate 1 took every allocation; rate <= 0 means unknown, left unscaled.
  if (b.rate > 1 && b.size > 0) scale = 1 / -std::expm1(-static_cast<double>(b.size) / static_cast<double>(b.rate));
  const double allocs = static_cast<double>(b.allocs) * scale;
  const double inuse = static_cast<double>(b.allocs - b.frees) * scale;
  const double size = static_cast<double>(b.size);
  return {allocs, allocs * size, inuse, inuse * size};
}

HeapProfileTable::HeapProfileTable(HotRegion* hot) : hot_(hot) {
  heads_ = static_cast<std::atomic<Bucket*>*>(Map(kBucketHeads * sizeof(Bucket*)));
  live_.store(NewLiveArray(1 << 12), std::memory_order_relaxed);
  live_mask_.store((1 << 12) - 1, std::memory_order_relaxed);
}

HeapProfileTable::~HeapProfileTable() {
  // Bucket memory is never returned while the table lives; a table dies only
  // in tests, and leaking its arena chunks there is cheaper than tracking them.
  Unmap(heads_, kBucketHeads * sizeof(Bucket*));
  FreeLiveArray(live_.load(std::memory_order_relaxed));
  if (spare_ != nullptr) FreeLiveArray(spare_);
  while (retired_ != nullptr) {
    LiveArray* next = retired_->retired;
    FreeLiveArray(retired_);
    retired_ = next;
  }
}

// Both sources are fresh mappings: zero-filled.
void* HeapProfileTable::Map(size_t n) {
  if (hot_ != nullptr) {
    if (void* p = hot_->Take(n)) return p;
  }
  return MapOrDie(n);
}

// Memory of the hot region stays where it is: unmapping part of it would
// split its huge page.
void HeapProfileTable::Unmap(void* p, size_t n) {
  if (hot_ == nullptr || !hot_->Contains(p)) munmap(p, n);
}

HeapProfileTable::LiveArray* HeapProfileTable::NewLiveArray(size_t cap) {
  // Zero pages are empty slots (atomics of 0).
  LiveArray* a = static_cast<LiveArray*>(Map(sizeof(LiveArray) + cap * sizeof(LiveSlot)));
  a->cap = cap;
  return a;
}

void HeapProfileTable::FreeLiveArray(LiveArray* a) { Unmap(a, sizeof(LiveArray) + a->cap * sizeof(LiveSlot)); }

void HeapProfileTable::Lock() { lock_.Lock(); }

void* HeapProfileTable::Alloc(size_t n) {
  // Whole lines: a bucket read at a sample then spans two lines, never three.
  return arena_.Alloc(n, 64, size_t{1} << 20, [this](size_t c) { return Map(c); });
}

// Inlined: a call would push another frame onto stack lines the program
// has evicted.
inline __attribute__((always_inline)) HeapProfileTable::Bucket* HeapProfileTable::FindBucket(
    StackHash key, uint64_t size, int64_t rate, size_t depth) const {
  for (Bucket* b = heads_[key.hash & (kBucketHeads - 1)].load(std::memory_order_acquire); b != nullptr; b = b->next) {
    if (b->key.hash == key.hash && b->key.check == key.check && b->size == size && b->rate == rate &&
        b->depth == depth) {
      return b;
    }
  }
  return nullptr;
}

HeapProfileTable::Bucket* HeapProfileTable::AddBucket(StackHash key, uint64_t size, int64_t rate,
                                                     const uintptr_t* pcs, size_t depth) {
  // Another writer may have added it since the caller looked.
  if (Bucket* b = FindBucket(key, size, rate, depth)) return b;
  Bucket* b = static_cast<Bucket*>(Alloc(sizeof(Bucket) + depth * sizeof(uintptr_t)));
  std::atomic<Bucket*>& head = heads_[key.hash & (kBucketHeads - 1)];
  b->next = head.load(std::memory_order_relaxed);
  b->key = key;
  b->size = size;
  b->rate = rate;
  b->allocs.store(0, std::memory_order_relaxed);
  b->frees.store(0, std::memory_order_relaxed);
  b->depth = static_cast<uint32_t>(depth);
  std::memcpy(b->pcs, pcs, depth * sizeof(uintptr_t));
  head.store(b, std::memory_order_release);
  b->all = all_;
  all_ = b;
  ++nbuckets_;
  return b;
}

// Writers hold lock_; only they store, so their own loads may be relaxed.
HeapProfileTable::LiveSlot* HeapProfileTable::LiveFind(uintptr_t p) {
  LiveArray* a = live_.load(std::memory_order_relaxed);
  const size_t mask = live_mask_.load(std::memory_order_relaxed);
  for (size_t i = PtrHash(p) & mask;; i = (i + 1) & mask) {
    const uintptr_t q = a->slots[i].ptr.load(std::memory_order_relaxed);
    if (q == p) return &a->slots[i];
    if (q == 0) return nullptr;
  }
}

void HeapProfileTable::LiveInsert(uintptr_t p, Bucket* b) {
  if ((live_used_ + 1) * 2 > live_mask_.load(std::memory_order_relaxed) + 1) LiveGrow();
  LiveArray* a = live_.load(std::memory_order_relaxed);
  const size_t mask = live_mask_.load(std::memory_order_relaxed);
  for (size_t i = PtrHash(p) & mask;; i = (i + 1) & mask) {
    LiveSlot& s = a->slots[i];
    const uintptr_t q = s.ptr.load(std::memory_order_relaxed);
    // A pointer freed without the allocator telling us (it must not happen,
    // but the slot is reused right away if it does) keeps one entry.
    if (q == p) {
      s.bucket.store(b, std::memory_order_release);
      return;
    }
    if (q <= 1) {
      if (q == 0) ++live_used_;
      // Release on both: a reader that sees p sees a complete bucket.
      s.bucket.store(b, std::memory_order_release);
      s.ptr.store(p, std::memory_order_release);
      ++live_count_;
      return;
    }
  }
}

void HeapProfileTable::LiveGrow() {
  LiveArray* old = live_.load(std::memory_order_relaxed);
  // Tombstones go away in the rehash; grow only if live entries need it.
  const size_t cap = live_count_ * 4 > old->cap ? old->cap * 2 : old->cap;
  LiveArray* a;
  if (spare_ != nullptr && spare_->cap == cap) {
    // Sampled objects die and tombstones fill the array long before live
    // ones do: most rehashes keep the size. Clearing the previous array
    // costs a fraction of mapping a new one and faulting in its pages.
    a = spare_;
    spare_ = nullptr;
    std::memset(static_cast<void*>(a->slots), 0, cap * sizeof(LiveSlot));
  } else {
    a = NewLiveArray(cap);
  }
  const size_t mask = cap - 1;
  size_t used = 0;
  for (size_t i = 0; i < old->cap; ++i) {
    const uintptr_t p = old->slots[i].ptr.load(std::memory_order_relaxed);
    if (p <= 1) continue;
    size_t j = PtrHash(p) & mask;
    while (a->slots[j].ptr.load(std::memory_order_relaxed) != 0) j = (j + 1) & mask;
    a->slots[j].bucket.store(old->slots[i].bucket.load(std::memory_order_relaxed), std::memory_order_relaxed);
    a->slots[j].ptr.store(p, std::memory_order_relaxed);
    ++used;
  }
  live_used_ = used;
  live_mask_.store(mask, std::memory_order_relaxed);
  // seq_cst store, then seq_cst load of readers_ (ForEachLive does the
  // mirror image): either no reader can still be in an old array, or the
  // arrays wait on the retired list for a later grow.
  live_.store(a, std::memory_order_seq_cst);
  old->retired = retired_;
  retired_ = old;
  if (readers_.load(std::memory_order_seq_cst) == 0) {
    while (retired_ != nullptr) {
      LiveArray* next = retired_->retired;
      if (spare_ == nullptr && retired_->cap == cap) {
        spare_ = retired_;
      } else {
        FreeLiveArray(retired_);
      }
      retired_ = next;
    }
  }
}

void HeapProfileTable::PrefetchLive(const void* p) const {
  const uintptr_t slots = reinterpret_cast<uintptr_t>(live_.load(std::memory_order_relaxed)->slots);
  const size_t i = PtrHash(reinterpret_cast<uintptr_t>(p)) & live_mask_.load(std::memory_order_relaxed);
  // An address, not &slots[i]: with a stale mask i may be past the array, and
  // a prefetch never faults.
  __builtin_prefetch(reinterpret_cast<const void*>(slots + i * sizeof(LiveSlot)), 1);
}

uintptr_t HeapProfileTable::RecordAlloc(const void* p, uint64_t size, int64_t rate, const uintptr_t* pcs,
                                        size_t depth, bool in_table) {
  if (depth > kMaxFrames) depth = kMaxFrames;
  const StackHash key = Hash(size, rate, pcs, depth);
  // A known stack whose sample the allocator keeps (nearly every sample)
  // takes no lock: the lock's exchange, like any locked instruction, waited
  // for every store the program still had in flight.
  Bucket* b = FindBucket(key, size, rate, depth);
  const bool live = p != nullptr && in_table;
  if (b == nullptr || live) {
    Lock();
    if (b == nullptr) b = AddBucket(key, size, rate, pcs, depth);
    if (live) LiveInsert(reinterpret_cast<uintptr_t>(p), b);
    Unlock();
  }
  b->allocs.fetch_add(1, std::memory_order_relaxed);
  return TokenOf(b);
}

const uintptr_t* HeapProfileTable::TokenStack(uintptr_t token, size_t* depth) {
  const Bucket* b = BucketOf(token);
  *depth = b->depth;
  return b->pcs;
}

void HeapProfileTable::RecordFree(const void* p) {
  Lock();
  if (LiveSlot* s = LiveFind(reinterpret_cast<uintptr_t>(p))) {
    s->bucket.load(std::memory_order_relaxed)->frees.fetch_add(1, std::memory_order_release);
    s->ptr.store(1, std::memory_order_release);
    --live_count_;
  }
  Unlock();
}

size_t HeapProfileTable::StackOfToken(uintptr_t token, uintptr_t* out, size_t max) {
  size_t depth;
  const uintptr_t* pcs = TokenStack(token, &depth);
  const size_t n = depth < max ? depth : max;
  std::memcpy(out, pcs, n * sizeof(uintptr_t));
  return n;
}

size_t HeapProfileTable::StackOf(const void* p, uintptr_t* out, size_t max) {
  Lock();
  size_t n = 0;
  if (LiveSlot* s = LiveFind(reinterpret_cast<uintptr_t>(p))) {
    n = StackOfToken(TokenOf(s->bucket.load(std::memory_order_relaxed)), out, max);
  }
  Unlock();
  return n;
}

size_t HeapProfileTable::live_sampled() {
  Lock();
  const size_t n = live_count_;
  Unlock();
  return n;
}

void HeapProfileTable::ForEachLive(
    void (*visit)(void* ctx, uintptr_t addr, size_t size, const uintptr_t* pcs, size_t npcs), void* ctx) {
  readers_.fetch_add(1, std::memory_order_seq_cst);
  const LiveArray* a = live_.load(std::memory_order_seq_cst);
  for (size_t i = 0; i < a->cap; ++i) {
    const LiveSlot& s = a->slots[i];
    const uintptr_t p = s.ptr.load(std::memory_order_acquire);
    if (p <= 1) continue;
    const Bucket* b = s.bucket.load(std::memory_order_acquire);
    // Re-read: a running writer may have freed p and reused the slot between
    // the two loads, pairing p with another object's bucket.
    if (s.ptr.load(std::memory_order_acquire) != p) continue;
    visit(ctx, p, b->size, b->pcs, b->depth);
  }
  readers_.fetch_sub(1, std::memory_order_release);
}

std::vector<HeapBucketSnapshot> HeapProfileTable::Snapshot() {
  return SnapshotBuckets<HeapBucketSnapshot>(lock_, nbuckets_, all_, kMaxFrames,
                                             [](HeapBucketSnapshot& out, const Bucket& b) {
                                               out.size = b.size;
                                               out.rate = b.rate;
                                               out.frees = b.frees.load(std::memory_order_acquire);
                                               out.allocs = b.allocs.load(std::memory_order_relaxed);
                                             });
}

namespace {
std::atomic<HeapProfileTable*> g_table{nullptr};
}  // namespace

HeapProfileTable& GlobalHeapTable() {
  // Never destroyed: frees may arrive from other threads during exit.
  static HeapProfileTable* t = [] {
    // The region too is never destroyed, so it is made in static storage.
    alignas(HotRegion) static unsigned char region_storage[sizeof(HotRegion)];
    HotRegion* hot = new (region_storage) HotRegion;
    void* mem = hot->Take(sizeof(HeapProfileTable));
    HeapProfileTable* made = new (mem != nullptr ? mem : MapOrDie(sizeof(HeapProfileTable))) HeapProfileTable(hot);
    g_table.store(made, std::memory_order_release);
    // A fork while another thread holds the lock would leave it held forever
    // in the child, whose first sample would then spin. Nothing is allocated
    // under the lock, so taking it before the allocator's own fork locks
    // cannot deadlock.
    pthread_atfork([] { g_table.load(std::memory_order_acquire)->Lock(); },
                   [] { g_table.load(std::memory_order_acquire)->Unlock(); },
                   [] { g_table.load(std::memory_order_acquire)->Unlock(); });
    return made;
  }();
  return *t;
}

HeapProfileTable* GlobalHeapTableIfCreated() { return g_table.load(std::memory_order_acquire); }

}  // namespace libdump::samplers
