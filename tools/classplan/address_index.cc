#include "address_index.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <stdexcept>

namespace libdump::dumptohprof {

AddressIndex::~AddressIndex() {
  if (entries_) ::munmap(entries_, capacity_ * sizeof(Entry));
}

void AddressIndex::AddSlow(uint64_t addr, uint64_t size) {
  if (n_ == capacity_) {
    const size_t grown = capacity_ == 0 ? (size_t{1} << 16) : capacity_ * 2;
    void* p = entries_ == nullptr
                  ? ::mmap(nullptr, grown * sizeof(Entry), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                  : ::mremap(entries_, capacity_ * sizeof(Entry), grown * sizeof(Entry), MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
    // Filled once, front to back: huge pages take a fault per 2 MiB instead of
    // per 4 KiB (a third of all the converter's page faults otherwise).
    ::madvise(p, grown * sizeof(Entry), MADV_HUGEPAGE);
    entries_ = static_cast<Entry*>(p);
    capacity_ = grown;
  }
  if (n_ > 0 && addr < last_) sorted_ = false;
  last_ = addr;
  uint32_t small = kHuge;
  if (size < kHuge) {
    small = static_cast<uint32_t>(size);
  } else {
    huge_[addr] = std::max(huge_[addr], size);
  }
  entries_[n_++] = Entry{addr, small};
  lo_ = std::min(lo_, addr);
  hi_ = std::max(hi_, size > UINT64_MAX - addr ? UINT64_MAX : addr + std::max<uint64_t>(size, 1));
}

uint64_t AddressIndex::SizeOf(const Entry& e) const {
  return e.size == kHuge ? huge_.at(uint64_t{e.addr}) : e.size;  // a copy, as above
}

std::vector<uint64_t> AddressIndex::Finish() {
  if (!sorted_) {
    std::stable_sort(entries_, entries_ + n_, [](const Entry& a, const Entry& b) { return a.addr < b.addr; });
  }
  std::vector<uint64_t> duplicates;
  for (size_t i = 1; i < n_; ++i) {
    if (entries_[i].addr == entries_[i - 1].addr && (duplicates.empty() || duplicates.back() != entries_[i].addr)) {
      duplicates.push_back(uint64_t{entries_[i].addr});  // a copy: the packed member is misaligned
    }
  }
  if (n_ == 0) return duplicates;
  // About one bucket per two objects: 2 bytes per object.
  const uint64_t span = hi_ - lo_;
  const uint64_t want = std::max<uint64_t>(n_ / 2, 1);
  shift_ = 0;
  while ((span >> shift_) >= want) ++shift_;
  const size_t nb = static_cast<size_t>(span >> shift_) + 2;
  buckets_.assign(nb, 0);
  size_t i = 0;
  for (size_t b = 0; b < nb; ++b) {
    const uint64_t start = lo_ + (static_cast<uint64_t>(b) << shift_);
    while (i < n_ && entries_[i].addr < start) ++i;
    buckets_[b] = static_cast<uint32_t>(i);
  }
  return duplicates;
}

uint64_t AddressIndex::FindInRange(uint64_t p) const {
  if (n_ == 0 || p < lo_ || p >= hi_) return 0;
  const size_t b = static_cast<size_t>((p - lo_) >> shift_);
  // The last entry at or below p is before the first one above p, which lies
  // in [buckets_[b], buckets_[b + 1]].
  const Entry* ub = entries_ + buckets_[b];
  const Entry* last = entries_ + buckets_[b + 1];
  if (last - ub <= 8) {  // the usual bucket: a couple of entries, cheaper walked than halved
    while (ub < last && ub->addr <= p) ++ub;
  } else {
    ub = std::upper_bound(ub, last, p, [](uint64_t v, const Entry& e) { return v < e.addr; });
  }
  if (ub == entries_) return 0;
  const Entry& e = ub[-1];
  const uint64_t size = e.size == kHuge ? SizeOf(e) : e.size;
  return p - e.addr < size || p == e.addr ? e.addr : 0;
}

size_t AddressIndex::PositionOf(uint64_t p) const {
  if (n_ == 0 || p < lo_ || p >= hi_) return kNone;
  const size_t b = static_cast<size_t>((p - lo_) >> shift_);
  const Entry* first = entries_ + buckets_[b];
  const Entry* last = entries_ + buckets_[b + 1];
  const Entry* it = first;
  if (last - first <= 8) {  // the usual bucket, walked as FindInRange walks it
    while (it < last && it->addr < p) ++it;
  } else {
    it = std::lower_bound(first, last, p, [](const Entry& e, uint64_t v) { return e.addr < v; });
  }
  return it != last && it->addr == p ? static_cast<size_t>(it - entries_) : kNone;
}

size_t AddressIndex::memory_bytes() const {
  return n_ * sizeof(Entry) + buckets_.size() * sizeof(uint32_t) + huge_.size() * 32;
}

}  // namespace libdump::dumptohprof
