// Per-class tables: the histogram of one heap and the difference of two.
#pragma once

#include <string>
#include <vector>

#include "heap_graph.h"

namespace libdump::heapgraph {

enum class SortBy { kBytes, kCount, kRetained, kName };
// "bytes", "count", "retained", "name"; anything else is kBytes.
SortBy ParseSortBy(const std::string& s);

// Classes with instances (and, with `all`, those without), largest first by
// `by`, ties by name.
std::vector<uint32_t> Histogram(const HeapGraph& g, SortBy by, bool platform = true, bool all = false);

struct DiffRow {
  std::string name;
  uint64_t old_count = 0, new_count = 0;
  uint64_t old_bytes = 0, new_bytes = 0;
  uint64_t old_retained = 0, new_retained = 0;
  int64_t count_delta() const { return static_cast<int64_t>(new_count - old_count); }
  int64_t bytes_delta() const { return static_cast<int64_t>(new_bytes - old_bytes); }
  int64_t retained_delta() const { return static_cast<int64_t>(new_retained - old_retained); }
};

// Classes matched by name; rows that changed, the largest byte change first.
std::vector<DiffRow> Diff(const HeapGraph& old_heap, const HeapGraph& new_heap);

// Whether object i of `now` has no object of the same id and class in `base`
// (jhat's "new object" mark under -baseline).
bool IsNew(const HeapGraph& base, const HeapGraph& now, Index i);

}  // namespace libdump::heapgraph
