// Shortest reference chains from the roots, over strong references only (a
// Reference's referent does not keep its object alive).
#pragma once

#include <vector>

#include "heap_graph.h"
#include "progress.h"

namespace libdump::heapgraph {

// Fills g.path_parent by one breadth-first search from every root.
// `progress` hears "paths" (objects visited of the graph's).
void ComputePaths(HeapGraph& g, const Progress& progress = {});

// The chain root, ..., obj (empty when obj is unreachable through strong
// references).
std::vector<Index> PathFromRoot(const HeapGraph& g, Index obj);

// The roots naming obj (indices into g.roots).
std::vector<uint32_t> RootsOf(const HeapGraph& g, Index obj);

// Objects whose references include obj, at most `limit` from the `skip`-th;
// `total` gets how many there are. A scan of every reference: the graph keeps
// no reverse index (4 bytes per reference saved; a scan of 10^7 references
// takes milliseconds).
std::vector<Index> Referrers(const HeapGraph& g, Index obj, size_t skip, size_t limit, size_t* total);

// Objects reachable from obj (itself included), at most `limit`; `total_bytes`
// and `total` cover all of them.
std::vector<Index> ReachableFrom(const HeapGraph& g, Index obj, size_t limit, uint64_t* total_bytes, size_t* total);

}  // namespace libdump::heapgraph
