#include "libdump/format/pprof_protobuf.h"

namespace libdump::pprof {

namespace {
constexpr int kVarint = 0;
constexpr int kLengthDelimited = 2;
}  // namespace

void ProtoEncoder::AppendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(static_cast<uint8_t>(v) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void ProtoEncoder::Uint64Always(int field, uint64_t v) {
  Tag(field, kVarint);
  AppendVarint(buf_, v);
}

void ProtoEncoder::StringAlways(int field, std::string_view s) {
  Tag(field, kLengthDelimited);
  AppendVarint(buf_, s.size());
  buf_.append(s);
}

void ProtoEncoder::PackedUint64(int field, std::span<const uint64_t> v) {
  if (v.empty()) return;
  const size_t start = StartMessage();
  for (uint64_t x : v) AppendVarint(buf_, x);
  EndMessage(field, start);
}

void ProtoEncoder::PackedInt64(int field, std::span<const int64_t> v) {
  if (v.empty()) return;
  const size_t start = StartMessage();
  for (int64_t x : v) AppendVarint(buf_, static_cast<uint64_t>(x));
  EndMessage(field, start);
}

void ProtoEncoder::EndMessage(int field, size_t start) {
  const size_t body = buf_.size() - start;
  std::string header;
  AppendVarint(header, (static_cast<uint64_t>(field) << 3) | kLengthDelimited);
  AppendVarint(header, body);
  buf_.insert(start, header);
}

}  // namespace libdump::pprof
