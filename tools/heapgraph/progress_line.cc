#include "progress_line.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

namespace libdump::heapgraph {

namespace {

// A compressed dump's reader counts decompressed bytes, which the file's size
// does not bound: its total is unknown.
bool Compressed(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char m[4] = {};
  f.read(reinterpret_cast<char*>(m), 4);
  return (m[0] == 0x28 && m[1] == 0xB5 && m[2] == 0x2F && m[3] == 0xFD) || (m[0] == 0x1F && m[1] == 0x8B);
}

}  // namespace

ProgressLine::ProgressLine(std::string prefix, const std::string& path, bool enabled)
    : prefix_(std::move(prefix)), enabled_(enabled), tty_(::isatty(2) == 1) {
  struct stat st;
  if (enabled_ && path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && !Compressed(path)) {
    total_ = static_cast<uint64_t>(st.st_size);
  }
}

Progress ProgressLine::Callback() {
  return [this](const char* step, uint64_t offset) { Update(step, offset); };
}

std::string ProgressLine::Format(const std::string& step, uint64_t offset, uint64_t total, double seconds) {
  std::string s = step;
  if (offset == 0) return s;
  char b[160];
  const double mb = static_cast<double>(offset) / 1e6;
  const double rate = seconds > 0 ? mb / seconds : 0;
  if (total >= offset) {
    snprintf(b, sizeof b, " %.0f/%.0f MB", mb, static_cast<double>(total) / 1e6);
  } else {
    snprintf(b, sizeof b, " %.0f MB", mb);
  }
  s += b;
  if (rate > 0) {
    snprintf(b, sizeof b, ", %.0f MB/s", rate);
    s += b;
    if (total >= offset) {
      snprintf(b, sizeof b, ", %.0f s left", static_cast<double>(total - offset) / 1e6 / rate);
      s += b;
    }
  }
  return s;
}

void ProgressLine::Update(const char* step, uint64_t offset) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool new_step = step_ != step;
  if (new_step) {
    step_ = step;
    began_ = now;
  }
  // A terminal's line five times a second; a log's at each step and then
  // every ten seconds of a long one.
  const auto every = tty_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(10000);
  if (!new_step && now - shown_ < every) return;
  shown_ = now;
  const double secs = std::chrono::duration<double>(now - began_).count();
  const std::string line = prefix_ + ": " + Format(step_, offset, total_, secs);
  if (tty_) {
    std::cerr << '\r' << line << "\033[K" << std::flush;
  } else {
    std::cerr << line << '\n';
  }
}

void ProgressLine::Clear() {
  if (enabled_ && tty_) std::cerr << '\r' << "\033[K" << std::flush;
}

}  // namespace libdump::heapgraph
