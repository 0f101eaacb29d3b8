#include "progress.h"

#include <cstdio>

namespace libdump::dumptohprof {

void ProgressLine::Update(int pass, uint64_t offset) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  // Both passes read the whole dump: the work is twice its size.
  const uint64_t done = (pass == 2 && total_ != 0 ? total_ : 0) + offset;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? done / secs : 0;
  char eta[32] = "?";
  if (total_ != 0 && rate > 0 && 2 * total_ >= done) std::snprintf(eta, sizeof eta, "%.0fs", (2 * total_ - done) / rate);
  if (total_ != 0) {
    std::fprintf(stderr, "\rpass %d/2: %.1f of %.1f MB, %.0f MB/s, ETA %s   ", pass, offset / 1e6, total_ / 1e6,
                 rate / 1e6, eta);
  } else {
    std::fprintf(stderr, "\rpass %d/2: %.1f MB, %.0f MB/s   ", pass, offset / 1e6, rate / 1e6);
  }
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::Done() {
  if (drawn_) std::fprintf(stderr, "\r%60s\r", "");
  drawn_ = false;
}

}  // namespace libdump::dumptohprof
