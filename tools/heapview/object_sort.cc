#include "object_sort.h"

#include <algorithm>

namespace libdump::heapview {

std::vector<heapgraph::Index> SortObjects(const heapgraph::HeapGraph& g, heapgraph::IndexSpan objs, const SortOrder& o,
                                          std::string_view filter) {
  // The filter is decided per class, not per object: 10^7 objects, a few
  // thousand classes.
  std::vector<char> pass(g.classes.size());
  for (size_t c = 0; c < g.classes.size(); ++c) pass[c] = ClassMatches(filter, g.classes[c].name);
  std::vector<heapgraph::Index> v;
  for (heapgraph::Index i : objs) {
    if (pass[g.cls[i]]) v.push_back(i);
  }
  const auto key = [&](heapgraph::Index a, heapgraph::Index b) {  // a before b, ascending
    if (o.column == "size") return g.Size(a) < g.Size(b);
    if (o.column == "class") {
      const int c = g.ClassName(a).compare(g.ClassName(b));
      return c != 0 ? c < 0 : g.retained[a] > g.retained[b];
    }
    return g.retained[a] < g.retained[b];
  };
  std::stable_sort(v.begin(), v.end(), [&](heapgraph::Index a, heapgraph::Index b) {
    return o.desc ? key(b, a) : key(a, b);
  });
  return v;
}

}  // namespace libdump::heapview
