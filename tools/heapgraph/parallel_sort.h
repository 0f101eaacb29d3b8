// Sorting a BigArray on the open's threads: each sorts a part, then pairs of
// sorted parts are merged, round after round, between the array and a second
// one of its size (a BigArray too: under a budget it is a file). With a
// strict total order the result is the same however many threads sort.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "big_array.h"
#include "threads.h"

namespace libdump::heapgraph {

// `less` must be a strict total order (ties broken by a unique key) for the
// answer not to depend on Threads(). Parts have at least `min_part` entries:
// a shorter array is sorted before a thread would have started.
template <typename T, typename Less>
void ParallelSort(BigArray<T>& a, Less less, size_t min_part = 65536) {
  const size_t n = a.size();
  const unsigned parts = static_cast<unsigned>(std::min<size_t>(Threads(), n / std::max<size_t>(min_part, 1) + 1));
  if (parts <= 1) {
    std::sort(a.begin(), a.end(), less);
    return;
  }
  std::vector<size_t> bound(parts + 1);
  for (unsigned k = 0; k <= parts; ++k) bound[k] = n * k / parts;
  RunParallel(parts, [&](unsigned k) { std::sort(a.begin() + bound[k], a.begin() + bound[k + 1], less); });
  BigArray<T> other(n);
  BigArray<T>* from = &a;
  BigArray<T>* to = &other;
  for (size_t width = 1; width < parts; width *= 2) {
    // Merges of runs [bound[k], bound[k + width]) and [.., bound[k + 2 width]).
    const unsigned merges = static_cast<unsigned>((parts + 2 * width - 1) / (2 * width));
    RunParallel(merges, [&](unsigned m) {
      const size_t k = m * 2 * width;
      size_t x = bound[k], y = bound[std::min<size_t>(k + width, parts)], out = x;
      const size_t x_end = y, y_end = bound[std::min<size_t>(k + 2 * width, parts)];
      // The merge: a comparison and a store an entry, nothing allocated.
      while (x < x_end && y < y_end) {
        big_array::Check();
        (*to)[out++] = less((*from)[y], (*from)[x]) ? (*from)[y++] : (*from)[x++];
      }
      while (x < x_end) (*to)[out++] = (*from)[x++];
      while (y < y_end) (*to)[out++] = (*from)[y++];
    });
    std::swap(from, to);
  }
  if (from != &a) a.swap(other);
}

}  // namespace libdump::heapgraph
