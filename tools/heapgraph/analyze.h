// Everything computed once when a heap is opened.
#pragma once

#include <vector>

#include "heap_graph.h"
#include "progress.h"

namespace libdump::heapgraph {

// Dominators, retained sizes, paths from the roots, per-class counts, bytes
// and retained bytes, the top retainers. `progress` hears each phase's name
// and how far it is.
void Analyze(HeapGraph& g, const Progress& progress = {});

// Objects whose retained size is more than `fraction` of the reachable heap
// (most retained first), and classes whose instances together are.
struct Suspects {
  std::vector<Index> objects;
  std::vector<uint32_t> classes;
};
Suspects LeakSuspects(const HeapGraph& g, double fraction = 0.10);

// Objects the given one immediately dominates, most retained first. A scan
// of the idom array (no child index is kept).
std::vector<Index> Dominated(const HeapGraph& g, Index obj);

}  // namespace libdump::heapgraph
