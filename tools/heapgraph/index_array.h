// Object indices, and arrays of them in 4 or 8 bytes an entry.
//
// An Index is 64 bits wherever it is a value, so nothing counts objects in
// 32 bits. Stored per object or per reference (the graph's references, its
// id order, dominators, path parents), an index costs 4 bytes while the graph
// has fewer than 2^32 - 2 objects and 8 bytes beyond: the width is chosen once
// per graph (WideFor), and the 4-byte form keeps the two sentinels as its top
// two values. The algorithms that walk these arrays take the raw storage of
// one width (Visit), so their inner loops read plain integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

#include "big_array.h"

namespace libdump::heapgraph {

using Index = uint64_t;
inline constexpr Index kNone = UINT64_MAX;           // no object / unreachable
inline constexpr Index kSuperRoot = UINT64_MAX - 1;  // idom / path parent of a root

// The sentinels in 4 bytes are kNone and kSuperRoot cut to their low 32 bits,
// so a static_cast either way keeps them.
inline constexpr uint32_t kNarrowNone = static_cast<uint32_t>(kNone);
inline constexpr uint32_t kNarrowSuperRoot = static_cast<uint32_t>(kSuperRoot);

// Whether a graph of n objects needs 8-byte indices: the 4-byte form holds
// 0..n-1, the super root's number n (dominators) and the two sentinels.
inline constexpr bool WideFor(uint64_t n) { return n >= kNarrowSuperRoot; }

inline constexpr Index FromNarrow(uint32_t v) {
  return v >= kNarrowSuperRoot ? v | (kNone ^ kNarrowNone) : Index{v};
}

// A read-only run of an IndexArray (an object's references).
class IndexSpan {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Index;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Index;
    iterator() = default;
    iterator(const void* p, size_t i, bool wide) : p_(p), i_(i), wide_(wide) {}
    Index operator*() const {
      return wide_ ? static_cast<const uint64_t*>(p_)[i_] : FromNarrow(static_cast<const uint32_t*>(p_)[i_]);
    }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++i_;
      return t;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.i_ == b.i_; }

   private:
    const void* p_ = nullptr;
    size_t i_ = 0;
    bool wide_ = false;
  };

  IndexSpan() = default;
  IndexSpan(const uint32_t* p, size_t n) : p_(p), n_(n), wide_(false) {}
  IndexSpan(const uint64_t* p, size_t n) : p_(p), n_(n), wide_(true) {}
  IndexSpan(const std::vector<Index>& v) : IndexSpan(v.data(), v.size()) {}  // NOLINT: a vector is a span
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Index operator[](size_t k) const { return *iterator(p_, k, wide_); }
  iterator begin() const { return iterator(p_, 0, wide_); }
  iterator end() const { return iterator(p_, n_, wide_); }

 private:
  const void* p_ = nullptr;
  size_t n_ = 0;
  bool wide_ = false;
};

class IndexArray {
 public:
  IndexArray() = default;
  explicit IndexArray(bool wide) : wide_(wide) {}

  bool wide() const { return wide_; }
  // Empties the array and sets its width.
  void Reset(bool wide) {
    Free();
    wide_ = wide;
  }
  // Turns 4-byte storage into 8-byte storage, keeping the values.
  void Widen();

  Index operator[](size_t i) const { return wide_ ? wide_values_[i] : FromNarrow(narrow_[i]); }
  void Set(size_t i, Index v) {
    if (wide_) {
      wide_values_[i] = v;
    } else {
      narrow_[i] = static_cast<uint32_t>(v);
    }
  }
  void push_back(Index v) {
    if (wide_) {
      wide_values_.push_back(v);
    } else {
      narrow_.push_back(static_cast<uint32_t>(v));
    }
  }
  // One of the two is always empty: no test of the width.
  size_t size() const { return narrow_.size() + wide_values_.size(); }
  bool empty() const { return size() == 0; }
  size_t capacity() const { return wide_ ? wide_values_.capacity() : narrow_.capacity(); }
  size_t entry_bytes() const { return wide_ ? 8 : 4; }
  bool in_file() const { return wide_ ? wide_values_.in_file() : narrow_.in_file(); }
  // Adopted from an index file, read only (BigArray::Map).
  bool mapped() const { return wide_ ? wide_values_.mapped() : narrow_.mapped(); }
  IndexSpan span() const { return span(0, size()); }
  IndexSpan span(size_t begin, size_t end) const {
    return wide_ ? IndexSpan(wide_values_.data() + begin, end - begin) : IndexSpan(narrow_.data() + begin, end - begin);
  }

  void resize(size_t n, Index v = 0) {
    if (wide_) {
      wide_values_.resize(n, v);
    } else {
      narrow_.resize(n, static_cast<uint32_t>(v));
    }
  }
  void assign(size_t n, Index v) {
    clear();
    resize(n, v);
  }
  void AssignZeros(size_t n) {
    if (wide_) {
      wide_values_.AssignZeros(n);
    } else {
      narrow_.AssignZeros(n);
    }
  }
  void clear() {
    narrow_.clear();
    wide_values_.clear();
  }
  void Free() {
    narrow_.Free();
    wide_values_.Free();
  }
  void shrink_to_fit() {
    narrow_.shrink_to_fit();
    wide_values_.shrink_to_fit();
  }

  // The storage of the chosen width: the algorithms call f once with it
  // (BigArray<uint32_t>& or BigArray<uint64_t>&), so their loops carry no
  // width test.
  template <typename F>
  decltype(auto) Visit(F&& f) {
    return wide_ ? f(wide_values_) : f(narrow_);
  }
  template <typename F>
  decltype(auto) Visit(F&& f) const {
    return wide_ ? f(wide_values_) : f(narrow_);
  }
  // The storage of one width, for code already templated on it.
  template <typename T>
  BigArray<T>& storage() {
    static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>);
    if constexpr (sizeof(T) == 8) {
      return wide_values_;
    } else {
      return narrow_;
    }
  }
  template <typename T>
  const BigArray<T>& storage() const {
    return const_cast<IndexArray*>(this)->storage<T>();
  }
  BigArray<uint32_t>& narrow() { return narrow_; }
  BigArray<uint64_t>& wide_values() { return wide_values_; }
  const BigArray<uint32_t>& narrow() const { return narrow_; }
  const BigArray<uint64_t>& wide_values() const { return wide_values_; }

  // Equal values, whatever the widths.
  friend bool operator==(const IndexArray& a, const IndexArray& b);
  friend bool operator==(const IndexArray& a, const std::vector<Index>& b);

 private:
  bool wide_ = false;
  BigArray<uint32_t> narrow_;
  BigArray<uint64_t> wide_values_;
};

}  // namespace libdump::heapgraph
