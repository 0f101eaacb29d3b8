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

// Counts in one scale for done, total and rate, picked by the larger of
// done and total: "750/2000" below ten thousand, then "k", then "M".
struct Scale {
  double div;
  const char* suffix;
  const char* fmt;
};
Scale ScaleFor(uint64_t v) {
  if (v >= 1000000) return {1e6, " M", "%.1f"};
  if (v >= 10000) return {1e3, "k", "%.0f"};
  return {1, "", "%.0f"};
}

std::string Scaled(const Scale& s, double v) {
  char b[64];
  snprintf(b, sizeof b, s.fmt, v / s.div);
  return b;
}

}  // namespace

uint64_t ProgressLine::FileTotal(const std::string& path) {
  struct stat st;
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && !Compressed(path)) {
    return static_cast<uint64_t>(st.st_size);
  }
  return 0;
}

ProgressLine::ProgressLine(std::string prefix, const std::string& path, bool enabled)
    : ProgressLine(std::move(prefix), enabled ? FileTotal(path) : 0, enabled) {}

ProgressLine::ProgressLine(std::string prefix, uint64_t file_total, bool enabled)
    : prefix_(std::move(prefix)), enabled_(enabled), tty_(::isatty(2) == 1), file_total_(file_total) {}

Progress ProgressLine::Callback() {
  return [this](const char* step, uint64_t done, uint64_t total, ProgressUnit unit) {
    Update(step, done, total, unit);
  };
}

std::string ProgressLine::Format(const std::string& step, uint64_t done, uint64_t total, ProgressUnit unit,
                                 double seconds) {
  std::string s = step;
  const bool known = total >= done && total > 0;
  char b[160];
  if (unit == ProgressUnit::kObjects) {
    if (!known) return done ? s + " " + Scaled(ScaleFor(done), static_cast<double>(done)) + ScaleFor(done).suffix + " objects" : s;
    const Scale sc = ScaleFor(total);
    s += " " + Scaled(sc, static_cast<double>(done)) + "/" + Scaled(sc, static_cast<double>(total)) + sc.suffix +
         " objects";
    if (done == 0 || seconds <= 0) return s;
    const double rate = static_cast<double>(done) / seconds;
    const Scale rs = ScaleFor(static_cast<uint64_t>(rate));
    s += ", " + Scaled(rs, rate) + rs.suffix + " objects/s";
    snprintf(b, sizeof b, ", %.0f s left", static_cast<double>(total - done) / rate);
    return s + b;
  }
  if (done == 0) return s;
  const double mb = static_cast<double>(done) / 1e6;
  const double rate = seconds > 0 ? mb / seconds : 0;
  if (known) {
    snprintf(b, sizeof b, " %.0f/%.0f MB", mb, static_cast<double>(total) / 1e6);
  } else {
    snprintf(b, sizeof b, " %.0f MB", mb);
  }
  s += b;
  if (rate > 0) {
    snprintf(b, sizeof b, ", %.0f MB/s", rate);
    s += b;
    if (known) {
      snprintf(b, sizeof b, ", %.0f s left", static_cast<double>(total - done) / 1e6 / rate);
      s += b;
    }
  }
  return s;
}

void ProgressLine::Update(const char* step, uint64_t done, uint64_t total, ProgressUnit unit) {
  if (!enabled_) return;
  if (unit == ProgressUnit::kFileBytes) total = file_total_;
  std::lock_guard<std::mutex> lock(mu_);
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
  const std::string line = prefix_ + ": " + Format(step_, done, total, unit, secs);
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
