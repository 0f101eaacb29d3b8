// What a long open reports now and then: the phase it is in and how far it
// got, in bytes of the file (the passes that read it), in objects (the
// analysis phases) or in bytes of an output (the index write).
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <utility>

namespace libdump::heapgraph {

enum class ProgressUnit : uint8_t {
  kFileBytes,  // offset in the file read; its size is the total the reader knows
  kObjects,    // objects (or dominator-tree vertices) done of a total
  kBytes,      // bytes written of a total
};

// The callback of Load, Open, OpenIndexed and typing::Open. Callers report
// at most every 2^16 items or so: a report takes a clock reading and a lock.
// A callable of (step, done) is accepted too: it is told `done` of every
// report.
class Progress {
 public:
  using Full = std::function<void(const char* step, uint64_t done, uint64_t total, ProgressUnit unit)>;

  Progress() = default;
  Progress(std::nullptr_t) {}
  template <typename F>
    requires std::invocable<F&, const char*, uint64_t, uint64_t, ProgressUnit>
  Progress(F f) : fn_(std::move(f)) {}
  template <typename F>
    requires(!std::invocable<F&, const char*, uint64_t, uint64_t, ProgressUnit> &&
             std::invocable<F&, const char*, uint64_t>)
  Progress(F f)
      : fn_([f = std::move(f)](const char* step, uint64_t done, uint64_t, ProgressUnit) mutable { f(step, done); }) {}

  explicit operator bool() const { return static_cast<bool>(fn_); }
  // A pass over the file: `offset` bytes of it read (0: the phase's name only).
  void operator()(const char* pass, uint64_t offset) const {
    if (fn_) fn_(pass, offset, 0, ProgressUnit::kFileBytes);
  }
  // `done` of `total` items of `unit`.
  void operator()(const char* step, uint64_t done, uint64_t total, ProgressUnit unit = ProgressUnit::kObjects) const {
    if (fn_) fn_(step, done, total, unit);
  }

 private:
  Full fn_;
};

// Reports every 2^16 calls of Tick: for the analysis loops, whose items take
// nanoseconds each.
class ProgressTicker {
 public:
  ProgressTicker(const Progress& p, const char* step, uint64_t total)
      : p_(p), step_(step), total_(total) {
    if (p_) p_(step_, 0, total_);
  }
  // Item `done` (of total) is reached.
  void Tick(uint64_t done) {
    if ((done & 0xFFFF) == 0 && p_) p_(step_, done, total_);
  }

 private:
  const Progress& p_;
  const char* step_;
  uint64_t total_;
};

}  // namespace libdump::heapgraph
