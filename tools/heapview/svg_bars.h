// The summary page's pictures: the top retainers as horizontal bars, the
// ones past the top aggregated into one line, and the typed fraction as one
// bar stacked by the rule that named the bytes.
#pragma once

#include <cstddef>
#include <string>

#include "heap_graph.h"
#include "typing.h"

namespace libdump::heapview {

// The root that holds a top retainer: the kind and name of the root naming
// it ("global app::cache", "stack main"), or "several roots" when it is not
// a root itself (only the roots together dominate it).
std::string HeldBy(const heapgraph::HeapGraph& g, heapgraph::Index top_retainer);

// An SVG of the `top` largest top retainers (class, root, retained bytes and
// share of the reachable heap, each bar a link to its object page), then one
// bar for the rest: "2,318 smaller retainers, 41.0 MiB".
std::string RetainerBars(const heapgraph::HeapGraph& g, size_t top = 15);

// An SVG bar of every byte by the rule that named it (dump, dwarf, shape,
// holder, size, untyped), with its legend.
std::string TypedBar(const typing::Stats& st);

}  // namespace libdump::heapview

namespace libdump::heapview {

// The summary page's pictures with their headings: RetainerBars and TypedBar.
std::string SummaryPictures(const heapgraph::HeapGraph& g);

}  // namespace libdump::heapview
