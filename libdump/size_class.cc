#include "size_class.h"

#include <array>

namespace libdump::internal {

namespace {

constexpr std::array<uint32_t, kNumClasses> ClassSizes() {
  std::array<uint32_t, kNumClasses> s{};
  int n = 1;
  for (uint32_t size = 16; size <= 128; size += 16) s[n++] = size;
  for (uint32_t base = 128; base < kMaxSmallSize; base *= 2) {
    for (uint32_t q = 1; q <= 4; ++q) s[n++] = base + base / 4 * q;
  }
  return s;
}

// The smallest span that wastes at most 1/8 of itself on the tail and holds
// a full bitmap word of slots, or at least 8 slots in kMinSpanPages or more.
// Few slots per span make the owner thrash: a span on the full list rejoins
// with an eighth free, which for an 8-slot span is one slot, so every
// allocation would move a span between lists. Capped by the bitmap size.
constexpr uint32_t kMinSpanPages = 8;
constexpr ClassInfo MakeClass(uint32_t size) {
  if (size == 0) return ClassInfo{0, 0, 0, 0, 0, 0};
  uint32_t npages = 1;
  for (;; ++npages) {
    const uint64_t bytes = uint64_t{npages} * kPageSize;
    const uint64_t slots = bytes / size;
    if (slots > kMaxSlotsPerSpan) break;  // cannot happen: 1 page / 16 B = 512
    const bool enough = slots >= 64 || (npages >= kMinSpanPages && slots >= 8);
    if (enough && (bytes % size) * 8 <= bytes) break;
  }
  const uint32_t nslots = static_cast<uint32_t>(uint64_t{npages} * kPageSize / size);
  const uint64_t magic = ((uint64_t{1} << kDivShift) + size - 1) / size;
  return ClassInfo{size, npages, nslots, nslots * size, magic, ~uint64_t{0} / size + 1};
}

constexpr std::array<ClassInfo, kNumClasses> MakeClasses() {
  std::array<ClassInfo, kNumClasses> out{};
  const auto sizes = ClassSizes();
  for (int i = 0; i < kNumClasses; ++i) out[i] = MakeClass(sizes[i]);
  return out;
}

constexpr auto kClasses = MakeClasses();
static_assert(kClasses[kNumClasses - 1].size == kMaxSmallSize);

template <size_t N>
constexpr std::array<uint8_t, N> MakeLookup(uint32_t step) {
  std::array<uint8_t, N> t{};
  int c = 1;
  for (size_t i = 0; i < N; ++i) {
    const uint64_t size = i * step;
    while (kClasses[c].size < size) ++c;
    t[i] = static_cast<uint8_t>(c);
  }
  return t;
}

constexpr auto kSmall = MakeLookup<1024 / 16 + 1>(16);
constexpr auto kMedium = MakeLookup<kMaxSmallSize / 128 + 1>(128);

}  // namespace

const std::array<ClassInfo, kNumClasses> g_classes = kClasses;
const std::array<uint8_t, 1024 / 16 + 1> g_class_small = kSmall;
const std::array<uint8_t, kMaxSmallSize / 128 + 1> g_class_medium = kMedium;

}  // namespace libdump::internal
