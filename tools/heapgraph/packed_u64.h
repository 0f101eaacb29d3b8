// A sequence of 64-bit values that mostly grow slowly (object ids in id
// order, record offsets in file order) in a little over 4 bytes each: the
// first value of each block of 64 in full, the others as 32-bit distances
// from it. A value below its block's first or 4 GiB or more above it turns
// the whole array into plain 8-byte values, once, so any input stays exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "big_array.h"

namespace libdump::heapgraph {

class PackedU64 {
 public:
  uint64_t operator[](size_t i) const {
    if (!wide_.empty()) return wide_[i];
    return base_[i >> kShift] + low_[i];
  }
  size_t size() const { return wide_.empty() ? low_.size() : wide_.size(); }
  bool empty() const { return size() == 0; }
  bool packed() const { return wide_.empty(); }

  void push_back(uint64_t v) {
    if (!wide_.empty()) {
      wide_.push_back(v);
      return;
    }
    const size_t i = low_.size();
    if ((i & (kBlock - 1)) == 0) {
      base_.push_back(v);
      low_.push_back(0);
      return;
    }
    const uint64_t b = base_.back();
    if (v >= b && v - b <= UINT32_MAX) {
      low_.push_back(static_cast<uint32_t>(v - b));
      return;
    }
    Widen();
    wide_.push_back(v);
  }

  // Room for n values while they pack (no copy of the block firsts as they grow).
  void reserve(size_t n) {
    base_.reserve((n + kBlock - 1) / kBlock);
    low_.reserve(n);
  }
  void shrink_to_fit() {
    base_.shrink_to_fit();
    low_.shrink_to_fit();
    wide_.shrink_to_fit();
  }
  uint64_t MemoryBytes() const {
    return base_.capacity() * sizeof(uint64_t) + low_.capacity() * sizeof(uint32_t) +
           wide_.capacity() * sizeof(uint64_t);
  }

 // The three arrays as they are, for the index file (index_cache.cc), which
  // stores and restores them without re-packing.
  struct Parts {
    std::vector<uint64_t> base;
    BigArray<uint32_t> low;
    BigArray<uint64_t> wide;
  };
  const std::vector<uint64_t>& base() const { return base_; }
  const BigArray<uint32_t>& low() const { return low_; }
  const BigArray<uint64_t>& wide() const { return wide_; }
  // False when the parts do not form a PackedU64 (a corrupt index).
  bool Restore(Parts p) {
    const bool packed_ok = p.wide.empty() && p.base.size() == (p.low.size() + kBlock - 1) / kBlock;
    const bool wide_ok = !p.wide.empty() && p.base.empty() && p.low.empty();
    if (!packed_ok && !wide_ok) return false;
    base_ = std::move(p.base);
    low_ = std::move(p.low);
    wide_ = std::move(p.wide);
    return true;
  }

 // Values a block holds (a search among base() finds the block first).
  static constexpr size_t kShift = 6, kBlock = size_t{1} << kShift;

 private:

  void Widen() {
    wide_.reserve(low_.size() + 1);
    for (size_t i = 0; i < low_.size(); ++i) wide_.push_back(base_[i >> kShift] + low_[i]);
    std::vector<uint64_t>().swap(base_);
    low_.Free();
  }

  std::vector<uint64_t> base_;  // per block of 64 values: its first
  BigArray<uint32_t> low_;   // each value less its block's first
  BigArray<uint64_t> wide_;  // every value, once one did not fit
};

}  // namespace libdump::heapgraph
