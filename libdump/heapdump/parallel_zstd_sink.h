// zstd on several cores for heap dumps: the stream is cut into blocks, each
// compressed as an independent frame by one of N worker processes, and the
// frames are written in order (a file of several frames is one zstd stream).
//
// Workers are processes, not threads: a dump runs with the world stopped or in
// a fork-snapshot child, where pthread_create could wait forever on a loader
// or stack-cache lock a stopped thread holds, and would allocate the new
// thread's TLS from the heap being dumped. A worker is a copy of the writer
// made by clone() without CLONE_VM; it shares only one MAP_SHARED mapping with
// it (the blocks, their frames, the counters) and maps its zstd context
// privately. It exits with no signal to its parent, so a program's SIGCHLD
// handler or waitpid(-1) never sees it, and dies with the writer
// (PR_SET_PDEATHSIG).
//
// The writer compresses too when it would otherwise wait for a frame, so a
// worker descheduled on a loaded machine does not stall the stream.
//
// Memory: slots x (block + its bound) shared, plus one context per worker
// and the writer's (MemoryFor); nothing on the heap. docs/HEAPDUMP.md gives
// the figures.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "libdump/format/sink.h"

namespace libdump::heapdump {

class ParallelZstdSink final : public format::Sink {
 public:
  static constexpr size_t kDefaultBlock = size_t{1} << 20;
  static constexpr int kMaxWorkers = 64;

  // Bytes mapped for `workers` workers at `level` (shared ring and contexts).
  static size_t MemoryFor(int level, int workers, size_t block = kDefaultBlock);

  // Starts the workers. ok() is false when they cannot be started (no
  // libzstd, no memory, no fork): the caller then compresses on one thread.
  ParallelZstdSink(Sink& next, int level, int workers, size_t block = kDefaultBlock);
  ~ParallelZstdSink() override;
  ParallelZstdSink(const ParallelZstdSink&) = delete;
  ParallelZstdSink& operator=(const ParallelZstdSink&) = delete;

  bool ok() const { return shared_ != nullptr && started_ == workers_; }

  void Write(const void* data, size_t n) override;
  // Submits the block in progress and waits until every frame is written.
  void Flush() override;
  // Flush, then the workers exit. Must be called for a complete stream.
  void Finish();

 struct Shared;  // in the mapping the workers share
  struct Slot;

 private:

  Slot& SlotOf(uint64_t block) const;
  uint8_t* InputOf(uint64_t block) const;
  uint8_t* OutputOf(uint64_t block) const;
  void Submit();
  // Compresses a submitted block no worker has taken yet; false if none.
  bool Help();
  // Writes finished frames in order; with `until`, waits for frames < until.
  void WriteOut(uint64_t until, bool wait);
  bool WaitEvent(uint32_t seen);  // false when a worker died
  [[noreturn]] static void WorkerMain(Shared* s, const ParallelZstdSink* self, pid_t parent);
  void StopWorkers();

  Sink& next_;
  int level_;
  int workers_;
  int started_ = 0;
  size_t block_;
  size_t bound_;
  size_t slots_;
  size_t mapping_size_ = 0;
  Shared* shared_ = nullptr;
  uint8_t* ring_ = nullptr;
  pid_t pids_[kMaxWorkers] = {};
  std::optional<format::ZstdFrameCompressor> own_;  // the writer's, for Help()
  uint64_t next_block_ = 0;   // the block being filled
  size_t fill_ = 0;           // bytes in it
  uint64_t written_ = 0;      // blocks whose frame went to next_
  bool finished_ = false;
};

}  // namespace libdump::heapdump
