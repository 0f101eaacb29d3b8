#include "samplers/heap/hot_region.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "samplers/heap/heap_bucket_table.h"

namespace libdump::samplers {
namespace {

// The smaps value of `key` for the mapping that holds p, or -1.
long SmapsField(const void* p, const char* key) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(in, line)) {
    unsigned long lo, hi;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && line.rfind(key, 0) == 0) return std::strtol(line.c_str() + std::strlen(key), nullptr, 10);
  }
  return -1;
}

bool HugePagesNever() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(in, s);
  return s.empty() || s.find("[never]") != std::string::npos;
}

TEST(HotRegion, HandsOutWholeLinesOfOneAlignedRangeUntilFull) {
  HotRegion r;
  char* first = static_cast<char*>(r.Take(1));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % HotRegion::kSize, 0u);
  char* second = static_cast<char*>(r.Take(65));
  EXPECT_EQ(second, first + 64);
  char* third = static_cast<char*>(r.Take(8));
  EXPECT_EQ(third, first + 64 + 128);
  EXPECT_TRUE(r.Contains(third));
  EXPECT_FALSE(r.Contains(first + HotRegion::kSize));
  EXPECT_FALSE(r.Contains(first - 1));
  // Zero-filled, writable to the last byte.
  EXPECT_EQ(third[0], 0);
  EXPECT_EQ(r.Take(HotRegion::kSize), nullptr);
  char* rest = static_cast<char*>(r.Take(HotRegion::kSize - r.used()));
  ASSERT_NE(rest, nullptr);
  rest[HotRegion::kSize - (rest - first) - 1] = 1;
  EXPECT_EQ(r.Take(1), nullptr);
}

TEST(HotRegion, IsAdvisedForHugePages) {
  if (HugePagesNever()) GTEST_SKIP() << "transparent huge pages are off on this machine";
  HotRegion r;
  void* p = r.Take(64);
  ASSERT_NE(p, nullptr);
  // 1 only for a VMA that is advised (madvise mode) and holds an aligned
  // 2 MiB range: exactly what the region arranges.
  EXPECT_EQ(SmapsField(p, "THPeligible:"), 1);
}

TEST(HotRegion, HoldsWhatATableTouchesAtEverySample) {
  HotRegion r;
  {
    HeapProfileTable t(&r);
    const uintptr_t pcs[] = {0x1000, 0x2000, 0x3000};
    for (uintptr_t i = 1; i <= 1000; ++i) t.RecordAlloc(reinterpret_cast<void*>(i * 64), 64, 1, pcs, 3);
    for (uintptr_t i = 1; i <= 500; ++i) t.RecordFree(reinterpret_cast<void*>(i * 64));
    EXPECT_EQ(t.live_sampled(), 500u);
    // The bucket heads (128 KiB), a live array and a bucket chunk.
    EXPECT_GT(r.used(), size_t{1} << 20);
  }
}

}  // namespace
}  // namespace libdump::samplers
