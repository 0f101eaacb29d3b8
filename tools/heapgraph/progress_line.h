// The progress line a tool prints on stderr while it indexes a dump: the
// phase, bytes read of the file's size, the rate and the time left. On a
// terminal one line is rewritten in place (at most five times a second);
// otherwise each phase gets one line, so logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "load.h"

namespace libdump::heapgraph {

class ProgressLine {
 public:
  // `prefix` starts every line ("heapview: indexing FILE").
  ProgressLine(std::string prefix, const std::string& path, bool enabled);
  // The callback for Load, Open, OpenIndexed and typing::Open.
  Progress Callback();
  // Erases the terminal's line.
  void Clear();

  // The text for `step` at `offset` bytes, `seconds` after the step began,
  // of a file of `total` bytes (0: unknown, as in a compressed file).
  static std::string Format(const std::string& step, uint64_t offset, uint64_t total, double seconds);

 private:
  void Update(const char* step, uint64_t offset);

  std::string prefix_;
  bool enabled_, tty_;
  uint64_t total_ = 0;  // bytes a pass reads; 0 when not known
  std::string step_;
  std::chrono::steady_clock::time_point began_, shown_;
};

}  // namespace libdump::heapgraph
