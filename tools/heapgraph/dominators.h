// Dominators and retained sizes (Lengauer-Tarjan, iterative: a heap graph's
// chains are millions deep, too deep for recursion).
#pragma once

#include "heap_graph.h"
#include "progress.h"

namespace libdump::heapgraph {

// Fills g.idom and g.retained. A super root points at every root; objects it
// alone dominates get kSuperRoot, unreachable objects kNone (retained = their
// own size). Weak references count like the others, as in VisualVM and MAT.
// `progress` hears "dominators: numbering" (objects reached of the graph's),
// "dominators: predecessors", "dominators: semidominators" (vertices of the
// reached) and "dominators: retained sizes".
void ComputeDominators(HeapGraph& g, const Progress& progress = {});

}  // namespace libdump::heapgraph
