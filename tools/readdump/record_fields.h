// The fields of a record as (key, typed value) pairs, in wire order, so that
// the text and the JSON renderings of --records cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "libdump/format/record.h"

namespace libdump::readdump {

class FieldSink {
 public:
  virtual ~FieldSink() = default;
  // key is nullptr for the elements of a list of scalars.
  virtual void Hex(const char* key, uint64_t v) = 0;   // addresses, pcs, ids
  virtual void Dec(const char* key, uint64_t v) = 0;   // sizes, counts, offsets
  virtual void Bool(const char* key, bool v) = 0;
  virtual void Str(const char* key, std::string_view v) = 0;   // bytes from the dump
  virtual void Name(const char* key, std::string_view v) = 0;  // a symbolic value of ours
  virtual void BeginList(const char* key) = 0;
  virtual void EndList() = 0;
  virtual void BeginItem() = 0;  // a list element that has fields of its own
  virtual void EndItem() = 0;
};

void VisitFields(const format::Record& r, FieldSink& sink);

// Symbolic names; unknown values print as their number.
std::string ObjectKindName(uint64_t kind);
std::string FieldKindName(uint64_t kind);
std::string StatusName(uint64_t status);
std::string TypeFlagsName(uint64_t flags);

std::string HexString(uint64_t v);

}  // namespace libdump::readdump
