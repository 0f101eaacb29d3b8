// A series' growth (growth.h) as text and JSON, shared by readdump --growth
// and heapview's /api/series.
#pragma once

#include <ostream>

#include "growth.h"
#include "json_writer.h"

namespace libdump::heapgraph {

// `newest` is the last dump of the series (the points' paths are drawn in it).
// At most `top` class rows (0: all).
void PrintGrowth(std::ostream& out, const Growth& gr, const HeapGraph& newest, size_t top);
void WriteGrowthJson(readdump::JsonWriter& j, const Growth& gr, const HeapGraph& newest, size_t top);

}  // namespace libdump::heapgraph
