// --threads: each thread (goroutine record) with its stack. Frames name no
// thread; a thread's stack is the chain from its top frame (tos) through the
// parent links, which may be written in any order, so the table is printed
// once the whole dump has been read.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "json_writer.h"
#include "libdump/format/record.h"

namespace libdump::readdump {

class ThreadTable {
 public:
  struct Frame {
    const format::FrameRecord* record;
    uint64_t roots = 0;  // stack roots naming this frame
  };
  struct Thread {
    format::GoroutineRecord record;
    const format::ThreadInfoRecord* info = nullptr;
    std::vector<Frame> frames;  // top first
    // Why the chain stopped before a bottom frame (parent 0); empty if it did not.
    std::string broken;
  };

  void Add(const format::Record& r);
  // The threads in record order, stacks resolved; valid while the table is.
  std::vector<Thread> Threads() const;

 private:
  std::vector<format::GoroutineRecord> goroutines_;
  std::unordered_map<uint64_t, format::FrameRecord> frames_;  // by sp; the first of duplicates wins
  std::unordered_map<uint64_t, format::ThreadInfoRecord> infos_;  // by goroutine addr
  std::unordered_map<uint64_t, uint64_t> roots_;  // stack roots per frame sp
};

void PrintThreads(std::ostream& out, const ThreadTable& t);
void WriteThreadsJson(JsonWriter& json, const ThreadTable& t);

}  // namespace libdump::readdump
