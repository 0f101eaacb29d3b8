// The process's mappings from /proc/self/maps (proc::ReadMaps), kept in
// memory reserved beforehand, so it can be taken while threads are stopped.
// The unwinder and the root scanners only touch memory this map says is
// readable: a corrupt stack must not crash the process being dumped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::capture {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool is_stack = false;  // "[stack]" of the main thread
};

class MemoryMap {
 public:
  // Reserves room for `capacity` mappings (mmap, not malloc).
  explicit MemoryMap(size_t capacity = 1 << 16);
  ~MemoryMap();
  MemoryMap(const MemoryMap&) = delete;
  MemoryMap& operator=(const MemoryMap&) = delete;

  // Re-reads /proc/self/maps; false if it could not or the map overflowed.
  bool Read();

  const Mapping* Find(uint64_t addr) const;
  // True if [addr, addr+len) is readable.
  bool Readable(uint64_t addr, uint64_t len) const;
  size_t size() const { return size_; }
  const Mapping& operator[](size_t i) const { return maps_[i]; }

 private:
  Mapping* maps_;
  size_t capacity_;
  size_t size_ = 0;
};

}  // namespace libdump::capture
