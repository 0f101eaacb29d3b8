#include "platform/capture/memory_map.h"

#include <sys/mman.h>

#include "platform/proc/maps_parser.h"

namespace libdump::capture {

MemoryMap::MemoryMap(size_t capacity) : capacity_(capacity) {
  void* p = mmap(nullptr, capacity * sizeof(Mapping), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  maps_ = p == MAP_FAILED ? nullptr : static_cast<Mapping*>(p);
  if (maps_ == nullptr) capacity_ = 0;
}

MemoryMap::~MemoryMap() {
  if (maps_ != nullptr) munmap(maps_, capacity_ * sizeof(Mapping));
}

bool MemoryMap::Read() {
  size_ = 0;
  return proc::ForEachMapsLine([this](const proc::MapsLine& line) {
    if (size_ == capacity_) return false;
    Mapping& m = maps_[size_++];
    m.start = line.start;
    m.end = line.end;
    m.readable = line.readable;
    m.writable = line.writable;
    m.executable = line.executable;
    m.is_stack = line.path == "[stack]";
    return true;
  });
}

const Mapping* MemoryMap::Find(uint64_t addr) const {
  // /proc/self/maps is sorted by address.
  size_t lo = 0, hi = size_;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (maps_[mid].end <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo < size_ && maps_[lo].start <= addr ? &maps_[lo] : nullptr;
}

bool MemoryMap::Readable(uint64_t addr, uint64_t len) const {
  // A range may span adjacent mappings (a stack next to its guard never does
  // that readably, but two anonymous maps can).
  while (len > 0) {
    const Mapping* m = Find(addr);
    if (m == nullptr || !m->readable) return false;
    const uint64_t here = m->end - addr;
    if (here >= len) return true;
    addr += here;
    len -= here;
  }
  return true;
}

}  // namespace libdump::capture
