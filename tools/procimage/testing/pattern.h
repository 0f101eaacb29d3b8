// The bytes the image tests' target holds in its buffer, so a test can check
// every byte it reads back without sharing memory with the target.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::procimage::testing {

// Larger than a page, so a read crosses page boundaries; not a multiple of
// one, so the last page is partly used.
constexpr size_t kPatternSize = 3 * 4096 + 123;

// A byte no two nearby offsets share (period 251, a prime), so a read at a
// wrong offset shows.
inline uint8_t PatternByte(size_t i) { return static_cast<uint8_t>((i * 7 + i / 251 + 0x5a) % 251); }

inline void FillPattern(uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = PatternByte(i);
}

}  // namespace libdump::procimage::testing
