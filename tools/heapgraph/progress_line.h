// The progress line a tool prints on stderr while it indexes a dump: the
// phase, how far it is (bytes read of the file's size, objects done of the
// phase's total, bytes of the index written), the rate and the time left. On
// a terminal one line is rewritten in place (at most five times a second);
// otherwise each phase gets one line, so logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "load.h"

namespace libdump::heapgraph {

class ProgressLine {
 public:
  // `prefix` starts every line ("heapview: indexing FILE").
  ProgressLine(std::string prefix, const std::string& path, bool enabled);
  // The same with the file's FileTotal already read, by a caller that needs
  // it too.
  ProgressLine(std::string prefix, uint64_t file_total, bool enabled);
  // The callback for Load, Open, OpenIndexed and typing::Open. Safe to call
  // from several threads.
  Progress Callback();
  // What the callback does, for a caller that also reports elsewhere.
  void Update(const char* step, uint64_t done, uint64_t total, ProgressUnit unit);
  // Erases the terminal's line.
  void Clear();

  // The bytes a pass over `path` reads in all: its size, or 0 when unknown
  // (standard input, a compressed file, which counts decompressed bytes).
  static uint64_t FileTotal(const std::string& path);

  // The text for `step` at `done` of `total` (0: unknown) in `unit`,
  // `seconds` after the step began.
  static std::string Format(const std::string& step, uint64_t done, uint64_t total, ProgressUnit unit,
                            double seconds);
  // The same for bytes of the file read.
  static std::string Format(const std::string& step, uint64_t offset, uint64_t total, double seconds) {
    return Format(step, offset, total, ProgressUnit::kFileBytes, seconds);
  }

 private:
  std::string prefix_;
  bool enabled_, tty_;
  uint64_t file_total_ = 0;  // bytes a pass over the file reads; 0 when not known
  std::mutex mu_;
  std::string step_;
  std::chrono::steady_clock::time_point began_, shown_;
};

}  // namespace libdump::heapgraph
