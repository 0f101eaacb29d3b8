#include "word_scan.h"

#include <algorithm>

namespace libdump::coretodump {

namespace {

uint64_t ScanRange(const procimage::ProcessImage& image, const BlockIndex& blocks, uint64_t lo, uint64_t hi,
                   const std::function<void(uint64_t, uint64_t)>& emit) {
  constexpr uint64_t kChunk = 64 << 10, kPage = 4096;
  uint64_t buf[kChunk / 8];
  uint64_t missing = 0;
  lo = (lo + 7) & ~uint64_t{7};
  while (lo + 8 <= hi) {
    const uint64_t want = std::min(kChunk, (hi - lo) & ~uint64_t{7});
    const size_t got = image.Read(lo, buf, want) & ~size_t{7};
    for (size_t i = 0; i < got / 8; ++i) {
      if (buf[i] != 0 && blocks.Contains(buf[i])) emit(lo + 8 * i, buf[i]);
    }
    if (got == want) {
      lo += want;
      continue;
    }
    // A hole: go on at the next page.
    const uint64_t at = lo + got;
    const uint64_t next = std::min(hi, (at / kPage + 1) * kPage);
    missing += next - at;
    lo = next;
  }
  return missing;
}

}  // namespace

uint64_t ScanWords(const procimage::ProcessImage& image, const BlockIndex& blocks, uint64_t lo, uint64_t hi,
                   const std::function<void(uint64_t, uint64_t)>& emit) {
  const auto b = blocks.blocks();
  uint64_t missing = 0;
  for (size_t i = blocks.FirstEndingAfter(lo); lo < hi; ++i) {
    const uint64_t stop = i < b.size() ? std::min(hi, std::max(lo, b[i].addr)) : hi;
    if (lo < stop) missing += ScanRange(image, blocks, lo, stop, emit);
    if (i >= b.size() || b[i].addr >= hi) break;
    lo = std::max(lo, b[i].addr + b[i].size);
  }
  return missing;
}

}  // namespace libdump::coretodump
