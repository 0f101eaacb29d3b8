// The dominator tree's children, as a CSR built from g.idom: what walks the
// tree top down (the class-retained sizes, the growth of an accumulation
// point) reads it; the graph itself keeps only the parents.
#pragma once

#include <cstdint>

#include "big_array.h"
#include "heap_graph.h"
#include "progress.h"

namespace libdump::heapgraph {

// The children of v are child[begin[v]] .. child[begin[v + 1]), in
// increasing index; those of the super root at v = n (the object count).
// Unreachable objects are nobody's children. T: the width of g.idom
// (index_array.h).
template <typename T>
struct DominatorTree {
  BigArray<T> begin;  // n + 2 entries
  BigArray<T> child;
};

// Two sweeps of the objects (counting, then filling); `ticker`, when given,
// is told 0 .. 2n as they go.
template <typename T>
DominatorTree<T> DominatorChildren(const HeapGraph& g, const BigArray<T>& idom, ProgressTicker* ticker = nullptr);

}  // namespace libdump::heapgraph
