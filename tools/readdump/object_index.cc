#include "object_index.h"

#include <algorithm>

namespace libdump::readdump {

void ObjectIndex::Finish() {
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.addr < b.addr; });
  entries_.shrink_to_fit();
}

const ObjectIndex::Entry* ObjectIndex::Find(uint64_t p) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), p,
                             [](uint64_t v, const Entry& e) { return v < e.addr; });
  if (it == entries_.begin()) return nullptr;
  --it;
  if (Contains(*it, p)) return &*it;
  // Duplicates at one address (reported as such) may differ in size; asking the
  // first and the last of them keeps a lookup logarithmic whatever the input.
  auto first = std::lower_bound(entries_.begin(), it, it->addr,
                                [](const Entry& e, uint64_t v) { return e.addr < v; });
  return Contains(*first, p) ? &*first : nullptr;
}

const ObjectIndex::Entry* ObjectIndex::FindStart(uint64_t addr) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), addr,
                             [](const Entry& e, uint64_t v) { return e.addr < v; });
  return it != entries_.end() && it->addr == addr ? &*it : nullptr;
}

}  // namespace libdump::readdump
