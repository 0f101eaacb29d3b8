#include "block_index.h"

#include <algorithm>

namespace libdump::coretodump {

namespace {
auto FirstAbove(std::span<const heapwalk::LiveBlock> b, uint64_t addr) {
  return std::upper_bound(b.begin(), b.end(), addr,
                          [](uint64_t a, const heapwalk::LiveBlock& x) { return a < x.addr; });
}
}  // namespace

const heapwalk::LiveBlock* BlockIndex::Find(uint64_t addr) const {
  auto it = FirstAbove(blocks_, addr);
  if (it == blocks_.begin()) return nullptr;
  --it;
  return addr - it->addr < it->size ? &*it : nullptr;
}

bool BlockIndex::AnyStartsIn(uint64_t start, uint64_t end) const {
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), start,
                             [](const heapwalk::LiveBlock& x, uint64_t a) { return x.addr < a; });
  return it != blocks_.end() && it->addr < end;
}

size_t BlockIndex::FirstEndingAfter(uint64_t addr) const {
  auto it = FirstAbove(blocks_, addr);
  if (it != blocks_.begin() && addr - std::prev(it)->addr < std::prev(it)->size) --it;
  return static_cast<size_t>(it - blocks_.begin());
}

}  // namespace libdump::coretodump
