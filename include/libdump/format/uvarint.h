// Unsigned LEB128 varints, bit-compatible with Go's encoding/binary.
//
// Decoding is stricter than Go's ReadUvarint: besides overflow (more than 64
// bits) it rejects overlong encodings (a final 0x00 byte after a continuation
// byte), so every value has exactly one encoding and a reader can prove that
// what it parsed is what a writer wrote.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::format {

inline constexpr size_t kMaxUvarintLen = 10;

// Writes v at p (which must have kMaxUvarintLen bytes) and returns the length.
inline size_t PutUvarint(uint8_t* p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  p[n++] = static_cast<uint8_t>(v);
  return n;
}

inline constexpr size_t UvarintLen(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; ++n; }
  return n;
}

enum class UvarintStatus { kOk, kTruncated, kOverflow, kOverlong };

struct UvarintResult {
  uint64_t value = 0;
  size_t len = 0;  // bytes consumed when kOk; bytes examined otherwise
  UvarintStatus status = UvarintStatus::kTruncated;
};

// Decodes one uvarint from [p, p+n).
inline UvarintResult GetUvarint(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t b = p[i];
    if (i == kMaxUvarintLen - 1 && b > 1) return {0, i + 1, UvarintStatus::kOverflow};
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      if (b == 0 && i > 0) return {0, i + 1, UvarintStatus::kOverlong};
      return {v, i + 1, UvarintStatus::kOk};
    }
  }
  return {0, n, UvarintStatus::kTruncated};  // n < kMaxUvarintLen: the loop above decides longer inputs
}

const char* UvarintStatusString(UvarintStatus s);

}  // namespace libdump::format
