// --histogram: objects and bytes per type. Types may be defined after the
// objects that use them (libdump writes polymorphic classes last), so rows are
// keyed by type id and named only at the end. By default the rows are the
// typing pass's classes instead (SetClasses: class_histogram.h), each with the
// rule that named it; --raw-types keeps the dump's own types.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "json_writer.h"
#include "libdump/format/record.h"

namespace libdump::readdump {

class Histogram {
 public:
  struct Row {
    uint64_t type = 0;
    std::string name;  // "(untyped)" for type 0, "(undefined)" for a type no record defines
    std::string rule;  // the typing rule that named the class; empty for the dump's own types
    uint64_t count = 0;
    uint64_t bytes = 0;
  };

  // include_own: libdump's own memory (types flagged kTypeOwn before the
  // first object, as tools/heapgraph decides) gets rows; by default it is
  // left out of the rows and only counted.
  explicit Histogram(bool include_own = false) : include_own_(include_own) {}
  void Add(const format::Record& r);
  // Replaces the dump's own types by the typed classes (rows with a rule).
  void SetClasses(std::vector<Row> rows);
  bool typed() const { return typed_; }
  // By bytes, then count, descending; ties by name and id so output is stable.
  std::vector<Row> Rows() const;
  bool include_own() const { return include_own_; }
  uint64_t own_count() const { return own_.count; }
  uint64_t own_bytes() const { return own_.bytes; }

 private:
  struct Cell {
    uint64_t count = 0;
    uint64_t bytes = 0;
  };
  bool include_own_;
  std::unordered_map<uint64_t, Cell> cells_;
  std::unordered_map<uint64_t, std::string> names_;
  bool typed_ = false;
  std::vector<Row> classes_;
  std::unordered_set<uint64_t> own_types_;
  Cell own_;
};

// top == 0 prints every row.
void PrintHistogram(std::ostream& out, const Histogram& h, uint64_t top);
void WriteHistogramJson(JsonWriter& json, const Histogram& h, uint64_t top);

}  // namespace libdump::readdump
