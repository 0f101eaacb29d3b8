// What an object is at a glance, beside its Class@0xID in the lists: a
// string's or a text buffer's first characters, a container's element
// count, so a table of addresses reads as a table of things.
#pragma once

#include <string>

#include "heap_graph.h"

namespace libdump::heapview {

// "\"hello heapview\"" (printable bytes of an object without references,
// at most 24 characters), "12 elements" (an array or a container the
// typing pass counted), or "" when there is nothing short to say. Reads
// the object's record again only when it holds no references and is small.
std::string ShortLabel(const heapgraph::HeapGraph& g, heapgraph::Index i);

}  // namespace libdump::heapview
