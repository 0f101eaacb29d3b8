// Where pass 2 may split the dump between threads: record boundaries about
// every `target` bytes, noted in pass 1 (the only way to find a record
// boundary is to have parsed everything before it).
//
// A chunk is converted on any thread, into a fragment of its own that the
// main thread appends in dump order, unless it is serial: it holds a record
// whose conversion allocates hprof ids (other roots, finalizers: ids are
// numbered in dump order) or an object too large to hold in a fragment
// (streamed instead). The main thread converts serial chunks itself, in order.
// A whole chunk turns serial rather than being cut around such a record, so
// that the plan has at most one chunk per `target` bytes whatever the records.
#pragma once

#include <cstdint>
#include <vector>

namespace libdump::dumptohprof {

struct Chunk {
  uint64_t start = 0;  // offset of its first record
  uint64_t end = 0;    // offset after its last record
  bool serial = false;
};

class ChunkPlan {
 public:
  explicit ChunkPlan(uint64_t target = uint64_t{1} << 20) : target_(target) {}

  // Each record, in dump order: where it starts and whether converting it
  // needs the main thread.
  void Add(uint64_t offset, bool serial) {
    if (open_ && offset - current_.start >= target_) Close(offset);
    if (!open_) {
      current_ = {offset, offset, false};
      open_ = true;
    }
    current_.serial |= serial;
  }
  // After the last record, with the offset after it.
  void Finish(uint64_t end) {
    if (open_) Close(end);
  }

  const std::vector<Chunk>& chunks() const { return chunks_; }

 private:
  void Close(uint64_t end) {
    current_.end = end;
    chunks_.push_back(current_);
    open_ = false;
  }

  uint64_t target_;
  std::vector<Chunk> chunks_;
  Chunk current_;
  bool open_ = false;
};

}  // namespace libdump::dumptohprof
