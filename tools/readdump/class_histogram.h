// The histogram's rows from a typed heap: one per class of the typing pass
// (docs/TYPING.md), with the rule that named it, so that --histogram shows
// what --classes, heapview and the hprof show.
#pragma once

#include <vector>

#include "heap_graph.h"
#include "type_histogram.h"

namespace libdump::readdump {

// A row per class with instances; a class the dump named keeps its type id
// (0 for the others).
std::vector<Histogram::Row> ClassRows(const heapgraph::HeapGraph& g);

}  // namespace libdump::readdump
