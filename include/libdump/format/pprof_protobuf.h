// A protobuf wire encoder just big enough for profile.proto.
//
// Like Go's runtime/pprof, the profile is written without a protobuf library:
// the schema is small and fixed, and a profiler must not drag a code
// generator and its runtime into every program that links it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace libdump::pprof {

class ProtoEncoder {
 public:
  // Fields equal to their default (0, "", false) are omitted, as proto3 does;
  // the *Always variants write them anyway (needed where 0 is meaningful,
  // e.g. the empty string at index 0 of the string table).
  void Uint64(int field, uint64_t v) { if (v != 0) Uint64Always(field, v); }
  void Int64(int field, int64_t v) { if (v != 0) Uint64Always(field, static_cast<uint64_t>(v)); }
  void Bool(int field, bool v) { if (v) Uint64Always(field, 1); }
  void String(int field, std::string_view s) { if (!s.empty()) StringAlways(field, s); }
  void Uint64Always(int field, uint64_t v);
  void StringAlways(int field, std::string_view s);
  // Packed repeated fields (proto3's default encoding for scalars).
  void PackedUint64(int field, std::span<const uint64_t> v);
  void PackedInt64(int field, std::span<const int64_t> v);

  // Nested messages: the length is known only at the end, so StartMessage
  // remembers where the body begins and EndMessage slides the body up to
  // make room for tag and length (the way Go's encoder does it).
  size_t StartMessage() const { return buf_.size(); }
  void EndMessage(int field, size_t start);

  const std::string& bytes() const { return buf_; }
  std::string Take() { return std::move(buf_); }

  static void AppendVarint(std::string& out, uint64_t v);

 private:
  void Tag(int field, int wire_type) { AppendVarint(buf_, (static_cast<uint64_t>(field) << 3) | wire_type); }
  std::string buf_;
};

}  // namespace libdump::pprof
