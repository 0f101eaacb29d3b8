// Lists of objects (the top retainers, what one object dominates) in the
// order a table header asks for, filtered by class name.
#pragma once

#include <string_view>
#include <vector>

#include "heap_graph.h"
#include "table_sort.h"

namespace libdump::heapview {

// Columns "retained", "size", "class" (by name, then retained, largest
// first); ties keep the list's own order.
std::vector<heapgraph::Index> SortObjects(const heapgraph::HeapGraph& g, heapgraph::IndexSpan objs, const SortOrder& o,
                                          std::string_view filter);

}  // namespace libdump::heapview
