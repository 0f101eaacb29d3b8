#include "samplers/contention/contention_table.h"

#include <sched.h>
#include <sys/mman.h>

#include <cstring>
#include <new>

namespace libdump::samplers {

struct ContentionTable::Bucket {
  Bucket* next;  // hash chain
  Bucket* all;   // every bucket, for snapshots
  uint64_t hash;
  double count;
  double delay_ns;
  uint32_t depth;
  uintptr_t pcs[];
};

namespace {

void* MapOrDie(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

uint64_t StackHash(const uintptr_t* pcs, size_t depth) {
  uint64_t h = 0xcbf29ce484222325ULL ^ depth;
  for (size_t i = 0; i < depth; ++i) h = (h ^ pcs[i]) * 0x100000001b3ULL;
  return h ^ (h >> 29);
}

}  // namespace

ContentionTable::ContentionTable() {
  heads_ = static_cast<Bucket**>(MapOrDie(kHeads * sizeof(Bucket*)));
}

// Tables die only in tests: the arena's chunks are left mapped.
ContentionTable::~ContentionTable() { munmap(heads_, kHeads * sizeof(Bucket*)); }

void ContentionTable::Lock() { lock_.Lock(); }

void* ContentionTable::Alloc(size_t n) {
  return arena_.Alloc(n, 16, size_t{1} << 16, [](size_t c) { return MapOrDie(c); });
}

ContentionTable::Bucket* ContentionTable::FindLocked(uint64_t hash, const uintptr_t* pcs, size_t depth) const {
  for (Bucket* b = heads_[hash & (kHeads - 1)]; b != nullptr; b = b->next) {
    if (b->hash == hash && b->depth == depth && std::memcmp(b->pcs, pcs, depth * sizeof(uintptr_t)) == 0) return b;
  }
  return nullptr;
}

ContentionTable::Bucket* ContentionTable::Record(const uintptr_t* pcs, size_t depth, double count,
                                                 double delay_ns) {
  if (depth > kMaxFrames) depth = kMaxFrames;
  const uint64_t hash = StackHash(pcs, depth);
  Lock();
  Bucket* b = FindLocked(hash, pcs, depth);
  if (b == nullptr) {
    // Mapping a chunk under the lock is rare (one per ~1000 stacks) and takes
    // no lock of the program's.
    b = static_cast<Bucket*>(Alloc(sizeof(Bucket) + depth * sizeof(uintptr_t)));
    b->hash = hash;
    b->depth = static_cast<uint32_t>(depth);
    std::memcpy(b->pcs, pcs, depth * sizeof(uintptr_t));
    b->count = 0;
    b->delay_ns = 0;
    Bucket*& head = heads_[hash & (kHeads - 1)];
    b->next = head;
    head = b;
    b->all = all_;
    all_ = b;
    ++nbuckets_;
  }
  b->count += count;
  b->delay_ns += delay_ns;
  Unlock();
  return b;
}

void ContentionTable::Add(Bucket* b, double count, double delay_ns) {
  Lock();
  b->count += count;
  b->delay_ns += delay_ns;
  Unlock();
}

std::vector<ContentionBucketSnapshot> ContentionTable::Snapshot() {
  std::vector<ContentionBucketSnapshot> all =
      SnapshotBuckets<ContentionBucketSnapshot>(lock_, nbuckets_, all_, kMaxFrames,
                                                [](ContentionBucketSnapshot& out, const Bucket& b) {
                                                  out.count = b.count;
                                                  out.delay_ns = b.delay_ns;
                                                });
  std::erase_if(all, [](const ContentionBucketSnapshot& b) { return b.count <= 0; });
  return all;
}

void ContentionTable::Clear() {
  Lock();
  for (Bucket* b = all_; b != nullptr; b = b->all) {
    b->count = 0;
    b->delay_ns = 0;
  }
  Unlock();
}

}  // namespace libdump::samplers
