#include "open_progress.h"

#include "progress_line.h"

namespace libdump::heapview {

double OpenSnapshot::Rate() const { return step_seconds > 0 && done > 0 ? static_cast<double>(done) / step_seconds : 0; }

double OpenSnapshot::SecondsLeft() const {
  const double rate = Rate();
  if (rate <= 0 || total == 0 || done > total) return -1;
  return static_cast<double>(total - done) / rate;
}

std::string OpenSnapshot::Line() const {
  return heapgraph::ProgressLine::Format(step, done, total, unit, step_seconds);
}

OpenProgress::OpenProgress() : began_(Clock::now()), step_began_(began_) {}

uint64_t OpenProgress::StartFile(const std::string& path, size_t no, size_t files) {
  // The size is read before the lock: a stat and four bytes of the file.
  const uint64_t total = heapgraph::ProgressLine::FileTotal(path);
  std::lock_guard<std::mutex> lock(mu_);
  s_.file = path;
  s_.file_no = no;
  s_.files = files;
  s_.step.clear();
  s_.done = s_.total = 0;
  file_total_ = total;
  step_began_ = Clock::now();
  return total;
}

void OpenProgress::Update(const char* step, uint64_t done, uint64_t total, heapgraph::ProgressUnit unit) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (s_.step != step) {
    s_.step = step;
    step_began_ = now;
  }
  s_.done = done;
  s_.unit = unit;
  // A phase's name alone comes as offset 0 in the file: no count to show.
  const bool name_only = unit == heapgraph::ProgressUnit::kFileBytes && done == 0;
  s_.total = name_only ? 0 : unit == heapgraph::ProgressUnit::kFileBytes ? file_total_ : total;
}

OpenSnapshot OpenProgress::Snapshot() const {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  OpenSnapshot s = s_;
  s.step_seconds = std::chrono::duration<double>(now - step_began_).count();
  s.seconds = std::chrono::duration<double>(now - began_).count();
  return s;
}

}  // namespace libdump::heapview
