#include "samplers/cpu/sample_ring.h"

#include <sys/mman.h>

#include <new>

namespace libdump::samplers {

SampleRing::SampleRing(size_t capacity) {
  size_t n = 2;
  while (n < capacity) n <<= 1;
  mask_ = n - 1;
  bytes_ = n * sizeof(Cell);
  // mmap, not new: the profiler may run with libdump as the process's malloc
  // and must not show up in the heap it profiles.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  cells_ = static_cast<Cell*>(p);
  for (size_t i = 0; i < n; ++i) new (&cells_[i].seq) std::atomic<size_t>(i);
}

SampleRing::~SampleRing() { munmap(cells_, bytes_); }

size_t SampleRing::Push(uint64_t weight, const uintptr_t* pcs, size_t depth) {
  size_t pos = head_.load(std::memory_order_relaxed);
  Cell* c;
  for (;;) {
    c = &cells_[pos & mask_];
    const size_t seq = c->seq.load(std::memory_order_acquire);
    const intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
    if (diff == 0) {
      if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (diff < 0) {
      dropped_.fetch_add(weight, std::memory_order_relaxed);
      return 0;
    } else {
      pos = head_.load(std::memory_order_relaxed);
    }
  }
  if (depth > kMaxFrames) depth = kMaxFrames;
  c->sample.weight = weight;
  c->sample.depth = static_cast<uint32_t>(depth);
  for (size_t i = 0; i < depth; ++i) c->sample.pcs[i] = pcs[i];
  c->seq.store(pos + 1, std::memory_order_release);
  return pos + 1;
}

}  // namespace libdump::samplers
