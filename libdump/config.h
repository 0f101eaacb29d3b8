// Constants shared by the allocator's parts.
#pragma once

#include <cstddef>
#include <cstdint>

#define LIBDUMP_LIKELY(x) __builtin_expect(!!(x), 1)
#define LIBDUMP_UNLIKELY(x) __builtin_expect(!!(x), 0)
// For the globals the fast paths read: libdump.so does not export them, so
// malloc and free address them directly instead of loading their address
// from the GOT first. Tests link the static libdump_heap, where hidden
// symbols still resolve.
#define LIBDUMP_HIDDEN __attribute__((visibility("hidden")))

namespace libdump::internal {

inline constexpr size_t kPageShift = 13;  // 8 KiB pages: the unit of spans and of the page map
inline constexpr size_t kPageSize = size_t{1} << kPageShift;
inline constexpr size_t kArenaSize = size_t{1} << 30;  // unit of address-space reservation
// Transparent huge pages on x86-64; arenas are aligned to them so that every
// 2 MiB of an arena can be one huge page.
inline constexpr size_t kHugePageSize = size_t{2} << 20;
inline constexpr size_t kMaxSmallSize = 32768;          // larger requests get their own span
inline constexpr size_t kMinAlign = 16;                 // what malloc promises on x86-64
// Bitmaps of 8 words keep a span's metadata in three cache lines; size
// classes are laid out so that no span holds more slots than this.
inline constexpr size_t kBitmapWords = 8;
inline constexpr size_t kMaxSlotsPerSpan = kBitmapWords * 64;
inline constexpr int kAddressBits = 48;

}  // namespace libdump::internal
