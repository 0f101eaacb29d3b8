// What the typing pass found, as text and JSON for readdump and heapview:
// the typed fraction by rule, the typed class table, and the leaks
// (unreachable objects by class and in clusters).
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "json_writer.h"
#include "typing.h"

namespace libdump::typing {

using readdump::JsonWriter;

// "typed: 3500 of 3900 objects (89.7 %), 840000 of 852320 bytes (98.6 %)" and
// one line per rule.
void PrintTypedFraction(std::ostream& out, const Stats& s);
void WriteTypedFractionJson(JsonWriter& j, const Stats& s);

// Classes with instances, most bytes first: count, bytes, retained, rule, name.
void PrintClasses(std::ostream& out, const HeapGraph& g, size_t top);
void WriteClassesJson(JsonWriter& j, const HeapGraph& g, size_t top);

// Objects no root reaches through strong references. In a C++ heap nothing
// frees them any more: they are leaks (LeakSanitizer's "definitely lost").
struct LeakClass {
  uint32_t cls = 0;
  uint64_t count = 0, bytes = 0;
};
struct LeakCluster {
  Index entry = kNone;  // an object of the cluster no other object of it references (else its first)
  uint64_t count = 0, bytes = 0;
  std::vector<LeakClass> holds;  // its classes, most bytes first (at most 5)
};
struct Leaks {
  uint64_t objects = 0, bytes = 0;
  std::vector<LeakClass> classes;      // most bytes first
  std::vector<LeakCluster> clusters;   // connected groups of leaked objects, most bytes first (at most `top`)
  uint64_t cluster_count = 0;
};
// Needs Analyze()'s reachability. `top` bounds the clusters listed.
Leaks FindLeaks(const HeapGraph& g, size_t top = 20);
void PrintLeaks(std::ostream& out, const HeapGraph& g, const Leaks& l, size_t top);
void WriteLeaksJson(JsonWriter& j, const HeapGraph& g, const Leaks& l, size_t top);

}  // namespace libdump::typing
