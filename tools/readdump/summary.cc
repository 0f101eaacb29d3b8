#include "summary.h"

#include "record_fields.h"

namespace libdump::readdump {

using format::Kind;

void Summary::Add(const format::Record& r) {
  ++records;
  per_kind[static_cast<uint64_t>(r.kind)]++;
  switch (r.kind) {
    case Kind::kObject:
      object_bytes += r.object.size;
      if (r.object.type != 0) ++typed_objects;
      break;
    case Kind::kParams:
      if (!params) params = r.params;
      break;
    case Kind::kEof:
      stream_bytes = r.offset + 1;  // the eof record is its one-byte kind
      break;
    default:
      break;
  }
}

bool Summary::has_extensions() const {
  for (uint64_t k = format::kFirstExtensionKind; k <= format::kLastKind; ++k) {
    if (per_kind[k] != 0) return true;
  }
  return false;
}

namespace {

uint64_t Roots(const Summary& s) {
  return s.count(Kind::kStackRoot) + s.count(Kind::kDataRoot) + s.count(Kind::kOtherRoot);
}

}  // namespace

void PrintSummary(std::ostream& out, const std::string& file, const Summary& s) {
  out << "file: " << file << '\n';
  out << "format: " << format::DialectName(s.dialect);
  // Go runtimes' dumps map onto the model's kinds; extensions are libdump's.
  if (s.dialect == format::Dialect::kLibdump) {
    out << ", " << (s.has_extensions() ? "with libdump extensions" : "seed records only");
  }
  out << '\n';
  out << "compression: " << format::CompressionName(s.compression) << '\n';
  out << "stream: " << s.stream_bytes << " bytes\n";
  if (s.params) {
    const format::ParamsRecord& p = *s.params;
    out << "params: " << (p.big_endian ? "big" : "little") << "-endian, ptrsize " << p.ptr_size
        << ", hchansize " << p.hchan_size << ", heap [" << HexString(p.heap_start) << ", "
        << HexString(p.heap_end) << ") " << (p.heap_end - p.heap_start) << " bytes\n";
  } else {
    out << "params: none\n";
  }
  out << "records: " << s.records << '\n';
  for (uint64_t k = 1; k <= format::kLastKind; ++k) {
    if (s.per_kind[k] == 0) continue;
    const std::string name = format::KindName(static_cast<Kind>(k));
    out << "  " << name << std::string(12 - name.size(), ' ') << s.per_kind[k] << '\n';
  }
  const uint64_t objects = s.count(Kind::kObject);
  out << "objects: " << objects << " (" << s.typed_objects << " typed, "
      << objects - s.typed_objects << " untyped), " << s.object_bytes << " bytes\n";
  out << "types: " << s.count(Kind::kType) << '\n';
  out << "threads: " << s.count(Kind::kGoroutine) << " (" << s.count(Kind::kFrame)
      << " frames)\n";
  out << "roots: " << Roots(s) << " (stack " << s.count(Kind::kStackRoot) << ", data "
      << s.count(Kind::kDataRoot) << ", other " << s.count(Kind::kOtherRoot) << ")\n";
  out << "finalizers: " << s.count(Kind::kFinalizer) << '\n';
  out << "itabs: " << s.count(Kind::kItab) << '\n';
}

void WriteSummaryJson(JsonWriter& json, const Summary& s) {
  json.BeginObject();
  json.Field("format", format::DialectName(s.dialect));
  json.Key("extensions");
  json.Bool(s.has_extensions());
  json.Field("compression", format::CompressionName(s.compression));
  json.Field("stream_bytes", s.stream_bytes);
  json.Key("params");
  if (s.params) {
    const format::ParamsRecord& p = *s.params;
    json.BeginObject();
    json.Field("endian", p.big_endian ? "big" : "little");
    json.Field("ptrsize", p.ptr_size);
    json.Field("hchansize", p.hchan_size);
    json.Key("heapstart");
    json.Hex(p.heap_start);
    json.Key("heapend");
    json.Hex(p.heap_end);
    json.EndObject();
  } else {
    json.Null();
  }
  json.Field("records", s.records);
  json.Key("per_kind");
  json.BeginObject();
  for (uint64_t k = 1; k <= format::kLastKind; ++k) {
    if (s.per_kind[k] == 0) continue;
    json.Key(format::KindName(static_cast<Kind>(k)));
    json.Uint(s.per_kind[k]);
  }
  json.EndObject();
  json.Key("objects");
  json.BeginObject();
  json.Field("count", s.count(Kind::kObject));
  json.Field("typed", s.typed_objects);
  json.Field("bytes", s.object_bytes);
  json.EndObject();
  json.Field("types", s.count(Kind::kType));
  json.Field("threads", s.count(Kind::kGoroutine));
  json.Field("frames", s.count(Kind::kFrame));
  json.Key("roots");
  json.BeginObject();
  json.Field("stack", s.count(Kind::kStackRoot));
  json.Field("data", s.count(Kind::kDataRoot));
  json.Field("other", s.count(Kind::kOtherRoot));
  json.EndObject();
  json.Field("finalizers", s.count(Kind::kFinalizer));
  json.Field("itabs", s.count(Kind::kItab));
  json.EndObject();
}

}  // namespace libdump::readdump
