// The analyses as text and JSON, shared by readdump's verbs and heapview's
// /api/ endpoints so both print the same numbers the same way.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "heap_graph.h"
#include "histogram.h"
#include "json_writer.h"
#include "object_detail.h"
#include "own_line.h"

namespace libdump::heapgraph {

using readdump::JsonWriter;

// "Node@0x1000".
std::string Label(const HeapGraph& g, Index i);
std::string HexId(uint64_t id);
// An object id from "0x1000" or "4096"; false when it is neither.
bool ParseId(const std::string& s, uint64_t* id);

// own_line.h's line for g (HeapGraph::own_objects).
std::string OwnLine(const HeapGraph& g);

// The top retainers (children of the super root), most retained first.
void PrintDominators(std::ostream& out, const HeapGraph& g, size_t top);
void WriteDominatorsJson(JsonWriter& j, const HeapGraph& g, IndexSpan objects);

// The shortest strong chain from a root to obj, root first.
void PrintPath(std::ostream& out, const HeapGraph& g, Index obj);
void WritePathJson(JsonWriter& j, const HeapGraph& g, Index obj);

void PrintDiff(std::ostream& out, const std::vector<DiffRow>& rows, size_t top);
void WriteDiffJson(JsonWriter& j, const std::vector<DiffRow>& rows, size_t top);

void WriteHistogramJson(JsonWriter& j, const HeapGraph& g, const std::vector<uint32_t>& classes);
void WriteObjectJson(JsonWriter& j, const HeapGraph& g, Index i, const ObjectDetail& d);

}  // namespace libdump::heapgraph
