// The flight recorder's window: fixed-size chunks from one preallocated pool,
// each owned by one thread while it appends events, then sealed into a FIFO
// from which the oldest is taken back when the pool runs out (or freed once
// all its events are older than MinAge).
//
// Lock-free throughout: a thread appends to its own chunk and publishes the
// bytes with a release store of the chunk's length; chunks move between a
// free queue and the sealed FIFO (Vyukov's bounded MPMC queue of indices).
// No allocation after construction (everything is mmap'd), so appends are
// async-signal-safe: the SIGPROF handler appends CPU samples, and the crash
// handler reads the window. A reader pins chunks (a bit in their state)
// so that nobody recycles them under it; a writer that finds the oldest
// chunk pinned drops its event instead of waiting.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace libdump::samplers::flight {

inline constexpr size_t kChunkBytes = 16 * 1024;
inline constexpr size_t kMinChunks = 8;
inline constexpr size_t kMaxName = 128;   // region, task, thread names; category
inline constexpr size_t kMaxText = 1024;  // a log message

enum EventType : uint16_t {
  kRegionBegin = 1,  // u64 task; name
  kRegionEnd,        // i64 begin; u64 task; name
  kTaskBegin,        // u64 id; u64 parent; name
  kTaskEnd,          // u64 id; i64 begin; name
  kLog,              // u64 task; u32 category length; u32 text length; category; text
  kThreadName,       // name (the thread's, when it first records or renames itself)
  kThreadExit,       // u64 tid (written by the recorder's thread, which sees the exit)
  kCpuSample,        // u64 weight; aux pcs
  kHeap,             // u64 in use; u64 allocated; u64 released
  kWait,             // i64 begin; aux pcs; what
  kRegionBeginId,    // u64 task; aux the interned name (flight_recorder_names.h)
  kRegionEndId,      // i64 begin; u64 task; aux the interned name
  kAlloc,            // u64 size; u64 address; aux pcs
};

// Every event starts with this; size covers the whole event, a multiple of 8.
struct EventHeader {
  uint16_t type;
  uint16_t size;
  uint32_t aux;  // a length, or a count of pcs
  int64_t ts;    // Ticks() (flight_recorder_clock.h)
};
static_assert(sizeof(EventHeader) == 16);

// A bounded MPMC queue of chunk indices (Vyukov). Pop returns false when the
// queue is empty or its next cell's producer has not published yet: the
// caller never waits on another thread.
class IndexQueue {
 public:
  bool Init(size_t capacity);  // mmap'd; false if that fails
  bool Push(uint32_t v);
  bool Pop(uint32_t* v);
  size_t bytes() const { return bytes_; }

 private:
  struct Cell {
    std::atomic<uint64_t> seq;
    uint32_t value;
  };
  Cell* cells_ = nullptr;
  uint64_t mask_ = 0;
  size_t bytes_ = 0;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
};

// Chunk states. The owner and the recyclers move a chunk between kinds with
// an exclusive CAS or an xor that keeps the reader's pin bit.
enum ChunkState : uint32_t { kFree = 0, kClaimed = 1, kOwned = 2, kFull = 3, kKindMask = 3, kPinned = 4 };

struct ChunkHeader {
  std::atomic<uint32_t> state{kFree};
  std::atomic<uint32_t> used{0};  // published bytes of data
  uint32_t tid = 0;
  uint64_t seq = 0;                   // order in which chunks were taken
  std::atomic<int64_t> last_ts{0};    // newest event
};

// Counted on the slow paths only: a shared counter per event would cost
// every append an atomic add on a contended line.
struct WindowStats {
  std::atomic<uint64_t> dropped{0}, recycled{0}, aged{0};
};

// Per-thread writer state: plain data in initial-exec TLS, so the SIGPROF
// and crash handlers can use it. The owner keeps its chunk's fill level
// here (nobody else writes it while the chunk is owned): an append reads
// no shared line but its chunk header's, which it alone writes.
struct ThreadWriter {
  uint8_t* base;        // the chunk's data, valid when has_chunk
  ChunkHeader* header;  // and its header
  uint64_t generation;  // of the window the chunk belongs to
  uint32_t used;        // bytes of data published
  uint32_t pending;     // size of the event between Reserve and Commit
  int64_t pending_ts;
  uint32_t chunk;       // index, valid when has_chunk
  uint32_t tid;
  bool has_chunk;
  volatile bool busy;   // an append is in progress: a handler on this thread must not append
  bool in_hook;         // inside the SIGPROF handler or a sample hook: arm no timer
};
extern constinit thread_local ThreadWriter t_flight_writer __attribute__((tls_model("initial-exec")));
inline ThreadWriter& CurrentWriter() { return t_flight_writer; }

class Window {
 public:
  // Maps ceil(max_bytes / kChunkBytes) chunks (at least kMinChunks).
  bool Init(uint64_t max_bytes, uint64_t generation);
  void Release();  // gives the memory back; only when no thread can append

  // Appends one event of `payload` bytes (header excluded) to the calling
  // thread's chunk and returns where to write the payload, or nullptr (the
  // event is dropped). Commit publishes it. Async-signal-safe; the caller
  // sets w.busy around Reserve..Commit.
  // The fast path is inline: a compare against the thread's own fill level,
  // the header's stores, and at Commit two stores to the chunk's header (the
  // bytes published with release).
  uint8_t* Reserve(ThreadWriter& w, uint16_t type, uint32_t aux, int64_t ts, size_t payload) {
    const uint32_t size = static_cast<uint32_t>((sizeof(EventHeader) + payload + 7) & ~size_t{7});
    if (__builtin_expect(!w.has_chunk || w.generation != generation_ || w.used + size > kChunkBytes, 0)) {
      if (!ReserveSlow(w, size)) return nullptr;
    }
    auto* e = reinterpret_cast<EventHeader*>(w.base + w.used);
    e->type = type;
    e->size = static_cast<uint16_t>(size);
    e->aux = aux;
    e->ts = ts;
    w.pending = size;
    w.pending_ts = ts;
    return reinterpret_cast<uint8_t*>(e + 1);
  }
  void Commit(ThreadWriter& w) {
    w.used += w.pending;
    w.header->last_ts.store(w.pending_ts, std::memory_order_relaxed);  // for Age, read once sealed
    w.header->used.store(w.used, std::memory_order_release);
  }

  // Recorder thread: chunks of threads that have exited are sealed (their
  // tids reported to on_exit), sealed chunks whose newest event is older
  // than `before` are freed.
  template <class F>
  void SealDeadThreads(F&& on_exit);
  void Age(int64_t before);

  // Readers: Pin marks every chunk and returns how many hold data, filling
  // order[] (capacity chunks()) with their indices sorted by (tid, seq).
  size_t Pin(uint32_t* order);
  void Unpin();
  const ChunkHeader& header(uint32_t i) const { return headers_[i]; }
  const uint8_t* data(uint32_t i) const { return pool_ + size_t{i} * kChunkBytes; }

  size_t chunks() const { return nchunks_; }
  uint64_t generation() const { return generation_; }
  size_t metadata_bytes() const { return headers_bytes_ + free_.bytes() + sealed_.bytes(); }
  WindowStats& stats() { return stats_; }
  std::atomic<bool>& snapshotting() { return snapshotting_; }

 private:
  bool ReserveSlow(ThreadWriter& w, uint32_t size);
  bool TakeChunk(ThreadWriter& w);
  void Seal(uint32_t i);

  uint8_t* pool_ = nullptr;
  ChunkHeader* headers_ = nullptr;
  size_t nchunks_ = 0;
  size_t pool_bytes_ = 0, headers_bytes_ = 0;
  uint64_t generation_ = 0;
  IndexQueue free_, sealed_;
  std::atomic<uint64_t> next_seq_{1};
  std::atomic<bool> snapshotting_{false};
  WindowStats stats_;
};

bool ThreadAlive(uint32_t tid);

template <class F>
void Window::SealDeadThreads(F&& on_exit) {
  for (size_t i = 0; i < nchunks_; ++i) {
    ChunkHeader& h = headers_[i];
    if ((h.state.load(std::memory_order_acquire) & kKindMask) != kOwned) continue;
    const uint32_t tid = h.tid;
    if (ThreadAlive(tid)) continue;
    // The owner is gone, so nobody else moves this chunk out of kOwned.
    const int64_t last = h.last_ts.load(std::memory_order_relaxed);
    Seal(static_cast<uint32_t>(i));
    on_exit(tid, last);
  }
}

}  // namespace libdump::samplers::flight
