// Where the dumped objects are, in 14 bytes per object: a sorted array of
// (address, 32-bit size) and a bucket table over the address range that
// narrows each lookup to a few entries, so resolving a pointer costs about
// one cache miss instead of a binary search over millions of objects.
//
// The entries live in anonymous memory grown with mremap, which moves pages
// instead of copying them: the peak is the final size, not twice it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace libdump::dumptohprof {

class AddressIndex {
 public:
  AddressIndex() = default;
  ~AddressIndex();
  AddressIndex(const AddressIndex&) = delete;
  AddressIndex& operator=(const AddressIndex&) = delete;

  // Once per object in pass 1: the usual case inline, growth and objects of
  // 4 GiB and more out of line.
  void Add(uint64_t addr, uint64_t size) {
    if (n_ == capacity_ || size >= kHuge) [[unlikely]] return AddSlow(addr, size);
    sorted_ &= addr >= last_;
    last_ = addr;
    entries_[n_++] = Entry{addr, static_cast<uint32_t>(size)};
    lo_ = std::min(lo_, addr);
    const uint64_t end = addr + std::max<uint64_t>(size, 1);
    hi_ = std::max(hi_, end < addr ? UINT64_MAX : end);
  }
  // Sorts (unless objects came in address order) and builds the buckets.
  // Returns the addresses that start more than one object.
  std::vector<uint64_t> Finish();

  // The start of the object p points into (interior pointers included; a
  // pointer to a zero-size object's start too), or 0. With overlapping
  // objects the one starting last at or below p is asked, as readdump does.
  uint64_t Find(uint64_t p) const {
    // Inline: most words a conservative scan looks at point nowhere near the heap.
    return p - lo_ < hi_ - lo_ ? FindInRange(p) : 0;
  }

  // The position (0 .. size()-1, in address order) of the object starting
  // exactly at p, or kNone; for passes that keep a little per object.
  static constexpr size_t kNone = SIZE_MAX;
  size_t PositionOf(uint64_t p) const;
  uint64_t SizeAt(size_t position) const { return SizeOf(entries_[position]); }
  uint64_t StartAt(size_t position) const { return entries_[position].addr; }

  size_t size() const { return n_; }
  // One past the highest byte of any object (0 when empty).
  uint64_t end() const { return hi_; }
  size_t memory_bytes() const;

 private:
  struct [[gnu::packed]] Entry {
    uint64_t addr;
    uint32_t size;  // kHuge: the size is in huge_
  };
  static constexpr uint32_t kHuge = UINT32_MAX;
  void AddSlow(uint64_t addr, uint64_t size);
  uint64_t SizeOf(const Entry& e) const;
  uint64_t FindInRange(uint64_t p) const;

  Entry* entries_ = nullptr;
  size_t n_ = 0;
  size_t capacity_ = 0;  // entries
  bool sorted_ = true;
  uint64_t last_ = 0;  // the address added last
  uint64_t lo_ = UINT64_MAX;
  uint64_t hi_ = 0;
  std::unordered_map<uint64_t, uint64_t> huge_;  // addr -> size, for objects of 4 GiB and more
  std::vector<uint32_t> buckets_;  // buckets_[b]: entries starting below lo_ + (b << shift_)
  unsigned shift_ = 0;
};

}  // namespace libdump::dumptohprof
