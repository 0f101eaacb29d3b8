// Retained size by dominator path as an icicle: everything reachable on top,
// then the root kinds, then the classes along the dominator tree
// (heapgraph/flame.h), each frame as wide as the bytes it retains and a link
// to its object (one object) or its class. Frames narrower than a pixel are
// drawn as one "(N smaller)" frame beside their siblings, so the picture of
// any heap has at most a few thousand rectangles.
#pragma once

#include <string>

#include "flame.h"
#include "heap_graph.h"
#include "site.h"

namespace libdump::heapview {

constexpr double kFlameWidth = 1200;

std::string FlameSvg(const heapgraph::FlameTree& t, const heapgraph::HeapGraph& g, double width = kFlameWidth);

// The /flame page's body: what the picture shows, the picture, and the
// readdump command that writes it as folded stacks.
std::string FlameBody(const heapgraph::HeapGraph& g, const heapgraph::FlameTree& t);

// /flame.folded: the tree as folded stacks, text/plain.
Response FoldedResponse(const heapgraph::FlameTree& t);

}  // namespace libdump::heapview
