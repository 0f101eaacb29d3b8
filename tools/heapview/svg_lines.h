// The series page's picture: each growing class's bytes across the dumps,
// one line per class, and the top accumulation points' retained bytes as
// dashed lines marked at the newest dump.
#pragma once

#include <cstddef>
#include <string>

#include "growth.h"
#include "heap_graph.h"

namespace libdump::heapview {

// At most `classes` lines of growing classes (largest growth first) and
// `points` accumulation points; "" when the series has no growing class and
// no point (nothing to plot).
std::string GrowthPlot(const heapgraph::Growth& gr, const heapgraph::HeapGraph& newest, size_t classes = 8,
                       size_t points = 3);

}  // namespace libdump::heapview
