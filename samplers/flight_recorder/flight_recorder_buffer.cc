#include "samplers/flight_recorder/flight_recorder_buffer.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace libdump::samplers::flight {

namespace {

void* MapZeroed(size_t bytes, int flags = 0) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

size_t RoundToPage(size_t n) { return (n + 4095) & ~size_t{4095}; }

// The pool, 2 MiB-aligned and marked for transparent huge pages (the
// kernel's "madvise" mode, Debian's default): the default window is then 5
// pages to fault in instead of 2560. Small pages where THP is off.
uint8_t* MapHuge(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (bytes < kHuge) return static_cast<uint8_t*>(MapZeroed(bytes));
  auto* raw = static_cast<uint8_t*>(MapZeroed(bytes + kHuge));
  if (raw == nullptr) return nullptr;
  const auto at = reinterpret_cast<uintptr_t>(raw);
  auto* aligned = reinterpret_cast<uint8_t*>((at + kHuge - 1) & ~(kHuge - 1));
  if (aligned > raw) munmap(raw, static_cast<size_t>(aligned - raw));
  munmap(aligned + bytes, static_cast<size_t>(raw + bytes + kHuge - (aligned + bytes)));
  madvise(aligned, bytes, MADV_HUGEPAGE);
  return aligned;
}

}  // namespace

// initial-exec: the handlers may not trigger a lazy TLS allocation.
constinit thread_local ThreadWriter t_flight_writer __attribute__((tls_model("initial-exec"))) = {};

bool ThreadAlive(uint32_t tid) {
  return syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH;
}

bool IndexQueue::Init(size_t capacity) {
  size_t n = 2;
  while (n < capacity) n <<= 1;
  bytes_ = RoundToPage(n * sizeof(Cell));
  cells_ = static_cast<Cell*>(MapZeroed(bytes_));
  if (cells_ == nullptr) return false;
  mask_ = n - 1;
  for (size_t i = 0; i < n; ++i) new (&cells_[i].seq) std::atomic<uint64_t>(i);
  return true;
}

bool IndexQueue::Push(uint32_t v) {
  uint64_t pos = head_.load(std::memory_order_relaxed);
  Cell* c;
  for (;;) {
    c = &cells_[pos & mask_];
    const uint64_t seq = c->seq.load(std::memory_order_acquire);
    const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (diff == 0) {
      if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (diff < 0) {
      return false;  // full: cannot happen, a chunk is in at most one queue
    } else {
      pos = head_.load(std::memory_order_relaxed);
    }
  }
  c->value = v;
  c->seq.store(pos + 1, std::memory_order_release);
  return true;
}

bool IndexQueue::Pop(uint32_t* v) {
  uint64_t pos = tail_.load(std::memory_order_relaxed);
  Cell* c;
  for (;;) {
    c = &cells_[pos & mask_];
    const uint64_t seq = c->seq.load(std::memory_order_acquire);
    const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos + 1);
    if (diff == 0) {
      if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (diff < 0) {
      return false;
    } else {
      pos = tail_.load(std::memory_order_relaxed);
    }
  }
  *v = c->value;
  c->seq.store(pos + mask_ + 1, std::memory_order_release);
  return true;
}

bool Window::Init(uint64_t max_bytes, uint64_t generation) {
  nchunks_ = std::max<size_t>(kMinChunks, (max_bytes + kChunkBytes - 1) / kChunkBytes);
  pool_bytes_ = nchunks_ * kChunkBytes;
  headers_bytes_ = RoundToPage(nchunks_ * sizeof(ChunkHeader));
  generation_ = generation;
  pool_ = MapHuge(pool_bytes_);
  headers_ = static_cast<ChunkHeader*>(MapZeroed(headers_bytes_));
  if (pool_ == nullptr || headers_ == nullptr || !free_.Init(nchunks_) || !sealed_.Init(nchunks_)) return false;
  // Committed now, from user space: the window fills it within seconds
  // anyway, and an append (in a signal handler, too) then never takes a
  // page fault. A hypervisor with shadow page tables (this project's
  // machine) maps each page again at its first access from user space
  // however the guest populated it: ~10 us a 4 KiB page here, 26 ms for
  // the default window in small pages, which would otherwise land on the
  // first appends to each page.
  for (size_t off = 0; off < pool_bytes_; off += 4096) {
    reinterpret_cast<volatile uint8_t*>(pool_)[off] = 0;
  }
  for (size_t i = 0; i < nchunks_; ++i) {
    new (&headers_[i]) ChunkHeader;
    free_.Push(static_cast<uint32_t>(i));
  }
  return true;
}

void Window::Release() {
  // The pool stays mapped (a thread that read the recorder as running just
  // before the stop may still append to it); its pages go back to the OS.
  if (pool_ != nullptr) madvise(pool_, pool_bytes_, MADV_DONTNEED);
}

void Window::Seal(uint32_t i) {
  ChunkHeader& h = headers_[i];
  h.state.fetch_xor(kOwned ^ kFull, std::memory_order_release);
  sealed_.Push(i);
}

// The slow path of an append: seal the full chunk, take a free one, or
// else the oldest sealed one, unless a reader holds it.
bool Window::TakeChunk(ThreadWriter& w) {
  if (w.has_chunk) {
    Seal(w.chunk);
    w.has_chunk = false;
  }
  uint32_t i;
  if (free_.Pop(&i)) {
    ChunkHeader& h = headers_[i];
    h.tid = w.tid;
    h.seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
    h.used.store(0, std::memory_order_relaxed);
    h.state.fetch_xor(kFree ^ kOwned, std::memory_order_release);
  } else {
    if (snapshotting_.load(std::memory_order_acquire) || !sealed_.Pop(&i)) return false;
    ChunkHeader& h = headers_[i];
    uint32_t expected = kFull;
    if (!h.state.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire)) {
      sealed_.Push(i);  // pinned by a reader: keep it, lose this event
      return false;
    }
    h.tid = w.tid;
    h.seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
    h.used.store(0, std::memory_order_relaxed);
    h.state.fetch_xor(kClaimed ^ kOwned, std::memory_order_release);
    stats_.recycled.fetch_add(1, std::memory_order_relaxed);
  }
  w.chunk = i;
  w.base = pool_ + size_t{i} * kChunkBytes;
  w.header = &headers_[i];
  w.used = 0;
  w.has_chunk = true;
  return true;
}

bool Window::ReserveSlow(ThreadWriter& w, uint32_t size) {
  if (size > kChunkBytes) return false;
  if (w.generation != generation_) {
    w.generation = generation_;
    w.has_chunk = false;
    w.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  }
  if (w.has_chunk && w.used + size <= kChunkBytes) return true;
  if (!TakeChunk(w)) {
    stats_.dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void Window::Age(int64_t before) {
  // The FIFO is in sealing order, so the first chunk that is young enough
  // ends the pass (it goes back to the tail, a little out of order).
  for (size_t n = 0; n < nchunks_; ++n) {
    uint32_t i;
    if (!sealed_.Pop(&i)) return;
    ChunkHeader& h = headers_[i];
    uint32_t expected = kFull;
    if (h.last_ts.load(std::memory_order_relaxed) >= before ||
        !h.state.compare_exchange_strong(expected, kFree, std::memory_order_acquire)) {
      sealed_.Push(i);
      return;
    }
    h.used.store(0, std::memory_order_relaxed);
    free_.Push(i);
    stats_.aged.fetch_add(1, std::memory_order_relaxed);
  }
}

size_t Window::Pin(uint32_t* order) {
  size_t n = 0;
  for (size_t i = 0; i < nchunks_; ++i) {
    const uint32_t s = headers_[i].state.fetch_or(kPinned, std::memory_order_acq_rel);
    const uint32_t kind = s & kKindMask;
    if ((kind == kOwned || kind == kFull) && headers_[i].used.load(std::memory_order_acquire) > 0) {
      order[n++] = static_cast<uint32_t>(i);
    }
  }
  // std::sort neither allocates nor locks: safe in the crash handler.
  std::sort(order, order + n, [this](uint32_t a, uint32_t b) {
    return headers_[a].tid != headers_[b].tid ? headers_[a].tid < headers_[b].tid : headers_[a].seq < headers_[b].seq;
  });
  return n;
}

void Window::Unpin() {
  for (size_t i = 0; i < nchunks_; ++i) headers_[i].state.fetch_and(~uint32_t{kPinned}, std::memory_order_release);
}

}  // namespace libdump::samplers::flight
