// Pass 2's conversion of what may run on several threads at once: objects,
// and the roots that need no new hprof ids (stack and data roots). Each
// thread has its own ObjectWriter writing into its own hprof Writer (a
// fragment, or the file's writer when one thread converts everything); what
// they share is read-only: the catalog and the planned classes (HeapPlan).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dump_catalog.h"
#include "libdump/format/hprof_writer.h"
#include "libdump/format/reader.h"
#include "type_plan.h"

namespace libdump::dumptohprof {

struct PlannedType {
  TypePlan plan;
  format::hprof::Id instance_class = 0;
  format::hprof::Id array_class = 0;
  uint64_t data_size = 0;  // instance data bytes
};

struct FrameRoot {
  uint32_t thread_serial;
  uint32_t depth;
};

// What converting objects and roots reads, fixed before pass 2 starts.
struct HeapPlan {
  const DumpCatalog* catalog = nullptr;
  std::unordered_map<uint64_t, PlannedType> types;
  format::hprof::Id untyped_array = 0;  // class of untyped objects holding pointers
  std::vector<uint32_t> alloc_traces;   // TRACE serial of each allocation stack
  std::unordered_map<uint64_t, FrameRoot> frame_roots;  // frame sp -> thread and depth
  unsigned ptr = 8;
  bool big = false;
  bool redact = false;
  // --binary: each object's Go class by AddressIndex position, an index into
  // go_types (0: none, the object keeps its dump type); null without it.
  const std::vector<uint32_t>* go_class_of = nullptr;
  std::vector<PlannedType> go_types;
};

// Objects with no type, or a type no record defines.
struct UntypedCounts {
  uint64_t arrays = 0;
  uint64_t bytes = 0;
};

// What one ObjectWriter wrote; summed over threads at the end.
struct ObjectCounts {
  uint64_t objects = 0;
  uint64_t instances = 0;
  uint64_t object_arrays = 0;
  uint64_t primitive_arrays = 0;
  uint64_t truncated_arrays = 0;
  uint64_t roots = 0;
  uint64_t unresolved_roots = 0;
  uint64_t alloc_stacks = 0;
  std::unordered_map<uint64_t, std::array<uint64_t, 3>> by_type;  // dump type -> objects by Shape
  std::unordered_map<uint64_t, UntypedCounts> untyped;            // dump type -> untyped objects
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> go_typed;     // (dump type, Go class) -> objects

  void Add(const ObjectCounts& o);
};

class ObjectWriter {
 public:
  ObjectWriter(const HeapPlan& plan, format::hprof::Writer& out) : plan_(plan), out_(out) {}

  // Converts r when it is an object, a stack root or a data root; false for
  // other kinds. Throws format::FormatError.
  bool Convert(format::Reader& reader, const format::Record& r);
  // The object p points into, counting roots that point at none.
  format::hprof::Id Resolve(uint64_t p);

  ObjectCounts& counts() { return counts_; }

 private:
  void Object(format::Reader& reader, const format::Record& r);
  // --binary: converts the object as its Go class, if it has one.
  bool GoObject(format::Reader& reader, const format::ObjectRecord& o);
  void Instance(format::Reader& reader, const format::ObjectRecord& o, const PlannedType& t);
  void Words(format::Reader& reader, const format::ObjectRecord& o, format::hprof::Id cls,
             const std::vector<bool>& pointer_words);
  void Primitives(format::Reader& reader, const format::ObjectRecord& o, format::hprof::Type type);
  void Untyped(format::Reader& reader, const format::ObjectRecord& o, UntypedCounts& counts);
  void StackRoot(const format::StackRootRecord& r);
  void DataRoot(const format::DataRootRecord& r);
  uint64_t CapLength(uint64_t length, uint64_t unit);
  // Called per field and per word: inlined, as they were before the move here.
  [[gnu::always_inline]] inline uint64_t Word(const uint8_t* p) const;
  [[gnu::always_inline]] inline void Scalar(uint8_t* out, const uint8_t* src, uint32_t n) const;

  const HeapPlan& plan_;
  format::hprof::Writer& out_;
  ObjectCounts counts_;
  std::unordered_set<uint64_t> seen_duplicates_;
  uint32_t trace_ = format::hprof::kEmptyTrace;  // of the object being written
  // Consecutive objects often share a type: the last one's plan and counts.
  uint64_t last_type_id_ = 0;
  const PlannedType* last_type_ = nullptr;
  std::array<uint64_t, 3>* last_counts_ = nullptr;
  std::vector<uint8_t> prefix_, bytes_buf_;
  std::vector<format::hprof::Id> ids_buf_;
};

}  // namespace libdump::dumptohprof
