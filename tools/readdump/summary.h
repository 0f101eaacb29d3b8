// The default output: what a dump holds, counted in one pass.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "json_writer.h"
#include "libdump/format/reader.h"
#include "libdump/format/record.h"

namespace libdump::readdump {

struct Summary {
  format::Compression compression = format::Compression::kNone;
  format::Dialect dialect = format::Dialect::kLibdump;
  uint64_t stream_bytes = 0;  // decompressed length, header and eof included
  uint64_t records = 0;
  std::array<uint64_t, format::kLastKind + 1> per_kind{};
  std::optional<format::ParamsRecord> params;  // the first params record
  uint64_t object_bytes = 0;
  uint64_t typed_objects = 0;

  void Add(const format::Record& r);
  uint64_t count(format::Kind k) const { return per_kind[static_cast<uint64_t>(k)]; }
  bool has_extensions() const;
};

void PrintSummary(std::ostream& out, const std::string& file, const Summary& s);
void WriteSummaryJson(JsonWriter& json, const Summary& s);

}  // namespace libdump::readdump
