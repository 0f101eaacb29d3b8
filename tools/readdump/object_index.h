// Where the dumped objects are: a sorted vector of (addr, size, record offset),
// 24 bytes per object and nothing per payload byte, so that pointers can be
// resolved for dumps far larger than memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace libdump::readdump {

class ObjectIndex {
 public:
  struct Entry {
    uint64_t addr;
    uint64_t size;
    uint64_t offset;  // of the object record
  };

  void Add(uint64_t addr, uint64_t size, uint64_t offset) { entries_.push_back({addr, size, offset}); }
  // Sorts by address (records with equal addresses keep their file order).
  // Call once, after the last Add().
  void Finish();

  // The object p points into (interior pointers count; a pointer to the start
  // of a zero-size object too), or nullptr. With overlapping objects (a
  // problem of its own) the one starting last at or below p is asked.
  const Entry* Find(uint64_t p) const;
  // The first object starting exactly at addr, or nullptr.
  const Entry* FindStart(uint64_t addr) const;

  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<Entry> entries_;
};

// Whether p lies in the object [addr, addr + size); end overflow is fine.
inline bool Contains(const ObjectIndex::Entry& e, uint64_t p) {
  return p >= e.addr && (p - e.addr < e.size || p == e.addr);
}

}  // namespace libdump::readdump
