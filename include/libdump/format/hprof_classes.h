// Names and classes of an hprof file being written.
//
// Readers need every name as a UTF8 record and every class as a LOAD CLASS
// before the heap, but the CLASS DUMPs inside it: the table declares each
// class up front and dumps them all when the heap begins.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libdump/format/hprof_writer.h"

namespace libdump::format::hprof {

// Hands out ids for everything that is not a dumped object: strings, classes,
// frames, synthetic instances. They start above every object address, step 8
// like real addresses, and so never collide with an object id or 0.
class IdAllocator {
 public:
  explicit IdAllocator(Id first) : next_(first == 0 ? 8 : (first + 7) & ~Id{7}) {}
  Id Next() {
    const Id id = next_;
    next_ += 8;
    return id;
  }

 private:
  Id next_;
};

// Interned UTF8 records: each distinct text is written once.
class StringTable {
 public:
  StringTable(Writer& writer, IdAllocator& ids) : writer_(writer), ids_(ids) {}
  Id Intern(std::string_view text);
  size_t size() const { return ids_by_text_.size(); }

 private:
  Writer& writer_;
  IdAllocator& ids_;
  std::unordered_map<std::string, Id> ids_by_text_;
};

struct FieldSpec {
  std::string name;
  Type type = Type::kInt;
};

class ClassTable {
 public:
  ClassTable(Writer& writer, StringTable& strings, IdAllocator& ids)
      : writer_(writer), strings_(strings), ids_(ids) {}

  // Writes the LOAD CLASS (and the UTF8 of the name and field names) now.
  // `name` uses '/' between packages, as readers expect ("java/lang/Object").
  // instance_size 0: 16 header bytes plus the fields of the class and its
  // superclasses.
  Id Add(std::string_view name, Id super, std::span<const FieldSpec> fields, uint32_t instance_size = 0);
  // Static fields, written with the class's CLASS DUMP (at most 65535).
  void SetStatics(Id class_id, std::vector<StaticField> statics);
  uint32_t Serial(Id class_id) const { return entries_.at(class_id).serial; }
  // Bytes of instance data (own and inherited fields).
  uint64_t DataSize(Id class_id) const { return entries_.at(class_id).data_size; }
  size_t size() const { return order_.size(); }

  // Writes every CLASS DUMP, superclasses first. Call once, at the start of the heap.
  void DumpAll();

 private:
  struct Entry {
    uint32_t serial = 0;
    uint64_t data_size = 0;
    ClassDumpRecord dump;
  };
  Writer& writer_;
  StringTable& strings_;
  IdAllocator& ids_;
  std::unordered_map<Id, Entry> entries_;
  std::vector<Id> order_;  // declaration order: a superclass is declared before its subclasses
  uint32_t next_serial_ = 1;
};

}  // namespace libdump::format::hprof
