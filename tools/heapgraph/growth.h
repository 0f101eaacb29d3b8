// What grows across a series of dumps of one process.
//
// C++ and Go objects do not move, so an object keeps its identity from one
// dump to the next: the same address, size and class. A slot freed and
// reused by another allocation has another size or class, or is seen as a
// new object when it has neither (an unavoidable blind spot: a slot reused
// by the same class and size looks like a survivor). hprof ids are not
// addresses a collector keeps, so a series with an hprof in it compares by
// class and in aggregate only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heap_graph.h"

namespace libdump::heapgraph {

struct SeriesClass {
  std::string name;
  std::vector<uint64_t> count, bytes, retained;  // one entry per dump
  // Bytes went up at every step (never down, never flat), first to last.
  bool grows = false;
  int64_t bytes_growth() const { return static_cast<int64_t>(bytes.back() - bytes.front()); }
};

struct SeriesStep {
  uint64_t new_objects = 0, new_bytes = 0;      // in the later dump, not in the earlier
  uint64_t freed_objects = 0, freed_bytes = 0;  // in the earlier dump, gone from the later
};

struct GrowthPart {
  std::string name;  // class
  uint64_t count = 0, bytes = 0;
};

// A surviving object whose retained size grew, and under which no single
// surviving object it dominates carries most of that growth: where the
// growth accumulates (MAT's "accumulation point", here across a series).
struct AccumulationPoint {
  Index object = kNone;           // in the newest dump
  std::vector<uint64_t> retained;  // one entry per dump
  int64_t growth = 0;              // retained, last minus first
  // Objects this point retains in the newest dump that the first dump did
  // not have, by class, largest first.
  std::vector<GrowthPart> grown_by;
};

struct Growth {
  std::vector<std::string> files;
  std::vector<uint64_t> objects, bytes, reachable_bytes;  // per dump
  // Growing classes first (largest byte growth first), then the rest by the
  // size of their change; unchanged classes are left out.
  std::vector<SeriesClass> classes;
  // Object identity: false when a dump of the series is an hprof.
  bool by_object = false;
  uint64_t survived_objects = 0, survived_bytes = 0;  // in every dump
  std::vector<SeriesStep> steps;                       // dumps.size() - 1
  std::vector<AccumulationPoint> points;               // largest growth first
};

// `series` oldest first, at least two, each loaded and analysed (Open()).
// At most `top_points` accumulation points (0: all).
Growth AnalyzeGrowth(const std::vector<const HeapGraph*>& series, size_t top_points = 10);

// The class whose bytes grew the most from the first dump to the last, or
// null when none grew.
const SeriesClass* LargestGrowth(const Growth& gr);

}  // namespace libdump::heapgraph
