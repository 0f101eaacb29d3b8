// How far heapview's open of its dumps is: written by the thread that opens
// them (through the Progress callback), read by the server's threads for the
// page that waits. A snapshot under a mutex: a report comes every 2^16 items
// of a phase at most, so the lock is never contended long.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "progress.h"

namespace libdump::heapview {

struct OpenSnapshot {
  std::string file;               // the dump being opened
  size_t file_no = 0, files = 0;  // its place among the dumps to open (1-based; 0: none yet)
  std::string step;               // the phase ("" before the first report)
  uint64_t done = 0, total = 0;   // total 0: not known
  heapgraph::ProgressUnit unit = heapgraph::ProgressUnit::kFileBytes;
  double step_seconds = 0;  // since the phase began
  double seconds = 0;       // since the open began

  // Per second over the phase so far (0: not yet known).
  double Rate() const;
  // Seconds the phase still needs at its rate so far (negative: not known).
  double SecondsLeft() const;
  // As the progress line on stderr says it: "paths 1.0/3.0 M objects, ...".
  std::string Line() const;
};

class OpenProgress {
 public:
  OpenProgress();
  // The next dump, `no` of `files`. Returns its ProgressLine::FileTotal.
  uint64_t StartFile(const std::string& path, size_t no, size_t files);
  // What the Progress callback hears.
  void Update(const char* step, uint64_t done, uint64_t total, heapgraph::ProgressUnit unit);
  OpenSnapshot Snapshot() const;

 private:
  using Clock = std::chrono::steady_clock;
  mutable std::mutex mu_;
  OpenSnapshot s_;
  uint64_t file_total_ = 0;  // bytes a pass over the file reads (0: not known)
  Clock::time_point began_, step_began_;
};

}  // namespace libdump::heapview
