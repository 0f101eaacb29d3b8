// The progress line on a terminal: pass, bytes, rate and time left, redrawn
// at most five times a second on stderr.
#pragma once

#include <chrono>
#include <cstdint>

namespace libdump::dumptohprof {

class ProgressLine {
 public:
  // `total`: decompressed dump bytes per pass, 0 while unknown.
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  void set_total(uint64_t total) { total_ = total; }
  void Update(int pass, uint64_t offset);
  // Clears the line.
  void Done();

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  uint64_t total_ = 0;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace libdump::dumptohprof
