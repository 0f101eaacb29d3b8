#include "index_array.h"

namespace libdump::heapgraph {

void IndexArray::Widen() {
  if (wide_) return;
  wide_values_.reserve(narrow_.size());
  for (uint32_t v : narrow_) wide_values_.push_back(FromNarrow(v));
  narrow_.Free();
  wide_ = true;
}

bool operator==(const IndexArray& a, const IndexArray& b) {
  if (a.size() != b.size()) return false;
  if (a.wide_ == b.wide_) return a.wide_ ? a.wide_values_ == b.wide_values_ : a.narrow_ == b.narrow_;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

bool operator==(const IndexArray& a, const std::vector<Index>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < b.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace libdump::heapgraph
