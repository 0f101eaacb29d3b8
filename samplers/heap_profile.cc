#include "heap_profile.h"

#include <sched.h>
#include <sys/mman.h>

#include <cmath>
#include <cstring>
#include <new>

namespace libdump::samplers {

struct HeapProfileTable::Bucket {
  Bucket* next;  // hash chain
  Bucket* all;   // every bucket, for snapshots
  uint64_t hash;
  uint64_t size;
  int64_t rate;
  uint64_t allocs;
  uint64_t frees;
  uint32_t depth;
  uintptr_t pcs[];  // depth entries
};

namespace {

void* MapOrDie(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

uint64_t Hash(uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth) {
  uint64_t h = 0xcbf29ce484222325ULL ^ size ^ (static_cast<uint64_t>(rate) << 32);
  for (size_t i = 0; i < depth; ++i) h = (h ^ pcs[i]) * 0x100000001b3ULL;
  return h ^ (h >> 29);
}

uint64_t PtrHash(uintptr_t p) {
  uint64_t x = p * 0x9e3779b97f4a7c15ULL;
  return x ^ (x >> 31);
}

}  // namespace

HeapEstimate Unbias(const HeapBucketSnapshot& b) {
  double scale = 1;
  // rate 1 took every allocation; rate <= 0 means unknown, left unscaled.
  if (b.rate > 1 && b.size > 0) scale = 1 / -std::expm1(-static_cast<double>(b.size) / static_cast<double>(b.rate));
  const double allocs = static_cast<double>(b.allocs) * scale;
  const double inuse = static_cast<double>(b.allocs - b.frees) * scale;
  const double size = static_cast<double>(b.size);
  return {allocs, allocs * size, inuse, inuse * size};
}

HeapProfileTable::HeapProfileTable() {
  heads_ = static_cast<Bucket**>(MapOrDie(kBucketHeads * sizeof(Bucket*)));
  live_cap_ = 1 << 12;
  live_ = static_cast<LiveSlot*>(MapOrDie(live_cap_ * sizeof(LiveSlot)));
}

HeapProfileTable::~HeapProfileTable() {
  // Bucket memory is never returned while the table lives; a table dies only
  // in tests, and leaking its arena chunks there is cheaper than tracking them.
  munmap(heads_, kBucketHeads * sizeof(Bucket*));
  munmap(live_, live_cap_ * sizeof(LiveSlot));
}

void HeapProfileTable::Lock() {
  while (lock_.exchange(true, std::memory_order_acquire)) {
    while (lock_.load(std::memory_order_relaxed)) sched_yield();
  }
}

void* HeapProfileTable::Alloc(size_t n) {
  n = (n + 15) & ~size_t{15};
  if (n > arena_left_) {
    const size_t chunk = n > (1 << 20) ? n : (1 << 20);
    arena_ = static_cast<char*>(MapOrDie(chunk));
    arena_left_ = chunk;
  }
  void* p = arena_;
  arena_ += n;
  arena_left_ -= n;
  return p;
}

HeapProfileTable::Bucket* HeapProfileTable::FindOrAddBucket(uint64_t size, int64_t rate, const uintptr_t* pcs,
                                                           size_t depth) {
  const uint64_t h = Hash(size, rate, pcs, depth);
  Bucket** head = &heads_[h & (kBucketHeads - 1)];
  for (Bucket* b = *head; b != nullptr; b = b->next) {
    if (b->hash == h && b->size == size && b->rate == rate && b->depth == depth &&
        std::memcmp(b->pcs, pcs, depth * sizeof(uintptr_t)) == 0) {
      return b;
    }
  }
  Bucket* b = static_cast<Bucket*>(Alloc(sizeof(Bucket) + depth * sizeof(uintptr_t)));
  b->hash = h;
  b->size = size;
  b->rate = rate;
  b->allocs = 0;
  b->frees = 0;
  b->depth = static_cast<uint32_t>(depth);
  std::memcpy(b->pcs, pcs, depth * sizeof(uintptr_t));
  b->next = *head;
  *head = b;
  b->all = all_;
  all_ = b;
  ++nbuckets_;
  return b;
}

HeapProfileTable::LiveSlot* HeapProfileTable::LiveFind(uintptr_t p) {
  const size_t mask = live_cap_ - 1;
  for (size_t i = PtrHash(p) & mask;; i = (i + 1) & mask) {
    if (live_[i].ptr == p) return &live_[i];
    if (live_[i].ptr == 0) return nullptr;
  }
}

void HeapProfileTable::LiveInsert(uintptr_t p, Bucket* b) {
  if ((live_used_ + 1) * 2 > live_cap_) LiveGrow();
  const size_t mask = live_cap_ - 1;
  for (size_t i = PtrHash(p) & mask;; i = (i + 1) & mask) {
    // A pointer freed without the allocator telling us (it must not happen,
    // but the slot is reused right away if it does) keeps one entry.
    if (live_[i].ptr == p) {
      live_[i].bucket = b;
      return;
    }
    if (live_[i].ptr <= 1) {
      if (live_[i].ptr == 0) ++live_used_;
      live_[i] = {p, b};
      ++live_count_;
      return;
    }
  }
}

void HeapProfileTable::LiveGrow() {
  LiveSlot* old = live_;
  const size_t old_cap = live_cap_;
  // Tombstones go away in the rehash; grow only if live entries need it.
  live_cap_ = live_count_ * 4 > old_cap ? old_cap * 2 : old_cap;
  live_ = static_cast<LiveSlot*>(MapOrDie(live_cap_ * sizeof(LiveSlot)));
  live_used_ = 0;
  live_count_ = 0;
  for (size_t i = 0; i < old_cap; ++i) {
    if (old[i].ptr > 1) LiveInsert(old[i].ptr, old[i].bucket);
  }
  munmap(old, old_cap * sizeof(LiveSlot));
}

void HeapProfileTable::RecordAlloc(const void* p, uint64_t size, int64_t rate, const uintptr_t* pcs, size_t depth) {
  if (depth > kMaxFrames) depth = kMaxFrames;
  Lock();
  Bucket* b = FindOrAddBucket(size, rate, pcs, depth);
  ++b->allocs;
  if (p != nullptr) LiveInsert(reinterpret_cast<uintptr_t>(p), b);
  Unlock();
}

void HeapProfileTable::RecordFree(const void* p) {
  Lock();
  if (LiveSlot* s = LiveFind(reinterpret_cast<uintptr_t>(p))) {
    ++s->bucket->frees;
    s->ptr = 1;
    --live_count_;
  }
  Unlock();
}

size_t HeapProfileTable::StackOf(const void* p, uintptr_t* out, size_t max) {
  Lock();
  size_t n = 0;
  if (LiveSlot* s = LiveFind(reinterpret_cast<uintptr_t>(p))) {
    n = s->bucket->depth < max ? s->bucket->depth : max;
    std::memcpy(out, s->bucket->pcs, n * sizeof(uintptr_t));
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

std::vector<HeapBucketSnapshot> HeapProfileTable::Snapshot() {
  std::vector<HeapBucketSnapshot> out;
  std::vector<uintptr_t> stacks;
  std::vector<uint32_t> depths;
  size_t n;
  for (;;) {
    Lock();
    n = nbuckets_;
    Unlock();
    // Room for the buckets that exist now, reserved with the lock released
    // (this allocation may itself be sampled); retried if more appeared.
    out.resize(n);
    stacks.resize(n * kMaxFrames);
    depths.resize(n);
    Lock();
    if (nbuckets_ != n) {
      Unlock();
      continue;
    }
    size_t i = 0;
    for (Bucket* b = all_; b != nullptr; b = b->all, ++i) {
      out[i].size = b->size;
      out[i].rate = b->rate;
      out[i].allocs = b->allocs;
      out[i].frees = b->frees;
      depths[i] = b->depth;
      std::memcpy(&stacks[i * kMaxFrames], b->pcs, b->depth * sizeof(uintptr_t));
    }
    Unlock();
    break;
  }
  for (size_t i = 0; i < n; ++i) out[i].stack.assign(&stacks[i * kMaxFrames], &stacks[i * kMaxFrames] + depths[i]);
  return out;
}

HeapProfileTable& GlobalHeapTable() {
  // Never destroyed: frees may arrive from other threads during exit.
  static HeapProfileTable* t = new (MapOrDie(sizeof(HeapProfileTable))) HeapProfileTable;
  return *t;
}

}  // namespace libdump::samplers
