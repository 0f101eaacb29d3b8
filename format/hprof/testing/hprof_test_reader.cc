#include "hprof_test_reader.h"

#include <cstring>
#include <stdexcept>

namespace libdump::format::hprof::testing {

uint64_t Be(const std::string& s, size_t at, size_t n) {
  if (at > s.size() || s.size() - at < n) throw std::runtime_error("read past the end");
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | static_cast<uint8_t>(s[at + i]);
  return v;
}

std::vector<Rec> TopRecords(const std::string& f, uint64_t* timestamp) {
  static constexpr char kHeader[] = "JAVA PROFILE 1.0.2";
  if (f.size() < sizeof kHeader + 12 || std::memcmp(f.data(), kHeader, sizeof kHeader) != 0) {
    throw std::runtime_error("bad header");
  }
  if (Be(f, sizeof kHeader, 4) != 8) throw std::runtime_error("id size is not 8");
  if (timestamp) *timestamp = Be(f, sizeof kHeader + 4, 8);
  std::vector<Rec> out;
  size_t at = sizeof kHeader + 12;
  while (at < f.size()) {
    Rec r;
    r.offset = at;
    r.tag = static_cast<uint8_t>(f[at]);
    const uint64_t len = Be(f, at + 5, 4);
    if (f.size() - (at + 9) < len) throw std::runtime_error("truncated record");
    r.body = f.substr(at + 9, len);
    at += 9 + len;
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

size_t TypeBytes(uint8_t t) {
  switch (t) {
    case 2: return 8;
    case 4: case 8: return 1;
    case 5: case 9: return 2;
    case 6: case 10: return 4;
    case 7: case 11: return 8;
  }
  throw std::runtime_error("bad basic type " + std::to_string(t));
}

}  // namespace

std::vector<Rec> SubRecords(const std::string& s) {
  std::vector<Rec> out;
  size_t at = 0;
  while (at < s.size()) {
    const uint8_t tag = static_cast<uint8_t>(s[at]);
    size_t p = at + 1;
    switch (tag) {
      case 0xFF: p += 8; break;
      case 0x01: p += 16; break;
      case 0x03: case 0x08: p += 16; break;
      case 0x20: {
        p += 8 + 4 + 6 * 8 + 4;
        const uint64_t cp = Be(s, p, 2);
        p += 2;
        for (uint64_t i = 0; i < cp; ++i) p += 2 + 1 + TypeBytes(static_cast<uint8_t>(Be(s, p + 2, 1)));
        const uint64_t st = Be(s, p, 2);
        p += 2;
        for (uint64_t i = 0; i < st; ++i) p += 8 + 1 + TypeBytes(static_cast<uint8_t>(Be(s, p + 8, 1)));
        p += 2 + Be(s, p, 2) * 9;
        break;
      }
      case 0x21: p += 8 + 4 + 8; p += 4 + Be(s, p, 4); break;
      case 0x22: p += 8 + 4; p += 4 + 8 + Be(s, p, 4) * 8; break;
      case 0x23: {
        p += 8 + 4;
        const uint64_t n = Be(s, p, 4);
        p += 5 + n * TypeBytes(static_cast<uint8_t>(Be(s, p + 4, 1)));
        break;
      }
      default: throw std::runtime_error("unknown sub-record tag " + std::to_string(tag));
    }
    if (p > s.size()) throw std::runtime_error("sub-record overruns its segment");
    out.push_back({tag, at, s.substr(at + 1, p - at - 1)});
    at = p;
  }
  return out;
}

}  // namespace libdump::format::hprof::testing
