// Size classes: 16-byte steps up to 128 B, then four classes per doubling up
// to 32 KiB (at most 25% internal waste, 12.5% on average). Every class is a
// multiple of 16, and the power-of-two classes start every slot at a multiple
// of their size, which memalign relies on.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "config.h"

namespace libdump::internal {

inline constexpr int kNumClasses = 41;  // class 0 is unused: it marks large spans

struct ClassInfo {
  uint32_t size;      // slot size in bytes
  uint32_t npages;    // pages per span
  uint32_t nslots;    // slots per span (<= kMaxSlotsPerSpan)
  uint32_t span_bytes;  // nslots * size: the offset past the last slot
  uint64_t div_magic; // slot index = (offset * div_magic) >> kDivShift
  // An offset off (< 2^32) starts a slot iff off * multiple_magic <= multiple_magic - 1
  // (the divisibility test of Lemire, Kaser and Kurz, 2019): one multiply
  // for the free's interior-pointer test, where the index and its product
  // back were two dependent multiplies.
  uint64_t multiple_magic;
};
static_assert(sizeof(ClassInfo) == 32);
inline constexpr int kDivShift = 40;

extern LIBDUMP_HIDDEN const std::array<ClassInfo, kNumClasses> g_classes;
extern LIBDUMP_HIDDEN const std::array<uint8_t, 1024 / 16 + 1> g_class_small;             // by (size + 15) / 16
extern LIBDUMP_HIDDEN const std::array<uint8_t, kMaxSmallSize / 128 + 1> g_class_medium;  // by (size + 127) / 128

// size must be <= kMaxSmallSize.
inline int SizeToClass(size_t size) {
  return size <= 1024 ? g_class_small[(size + 15) >> 4] : g_class_medium[(size + 127) >> 7];
}

}  // namespace libdump::internal
