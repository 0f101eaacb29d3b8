// The bucket table on its own: what a bucket is keyed by, and the token a
// kept sample's free is counted through.
#include "samplers/heap/heap_bucket_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "libdump/interface/sampler_interface.h"

namespace libdump::samplers {
namespace {

// A sample compares a 128-bit hash of its stack, not the stack: stacks that
// differ only in their depth, or buckets that differ only in size or rate,
// must still land apart.
TEST(HeapProfileTable, BucketsAreKeyedByStackDepthSizeAndRate) {
  HeapProfileTable t;
  const uintptr_t pcs[] = {0x401000, 0x402000, 0x403000, 0x404000};
  t.RecordAlloc(nullptr, 64, 512, pcs, 3, false);
  t.RecordAlloc(nullptr, 64, 512, pcs, 2, false);
  t.RecordAlloc(nullptr, 64, 512, pcs, 4, false);
  t.RecordAlloc(nullptr, 64, 512, pcs, 3, false);
  t.RecordAlloc(nullptr, 80, 512, pcs, 3, false);
  t.RecordAlloc(nullptr, 64, 1024, pcs, 3, false);
  const uintptr_t other[] = {0x401000, 0x402000, 0x403001};
  t.RecordAlloc(nullptr, 64, 512, other, 3, false);
  std::vector<HeapBucketSnapshot> s = t.Snapshot();
  ASSERT_EQ(s.size(), 6u);
  std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) {
    return std::tie(a.stack, a.size, a.rate) < std::tie(b.stack, b.size, b.rate);
  });
  // {1,2} / {1,2,3} x (64,512) (64,1024) (80,512) / {1,2,3'} / {1,2,3,4}
  EXPECT_EQ(s[0].stack, std::vector<uintptr_t>(pcs, pcs + 2));
  EXPECT_EQ(s[1].stack, std::vector<uintptr_t>(pcs, pcs + 3));
  EXPECT_EQ(s[1].size, 64u);
  EXPECT_EQ(s[1].rate, 512);
  EXPECT_EQ(s[1].allocs, 2u);
  EXPECT_EQ(s[2].rate, 1024);
  EXPECT_EQ(s[3].size, 80u);
  EXPECT_EQ(s[4].stack, std::vector<uintptr_t>(pcs, pcs + 4));
  EXPECT_EQ(s[5].stack, std::vector<uintptr_t>(other, other + 3));
  for (size_t i : {0, 2, 3, 4, 5}) EXPECT_EQ(s[i].allocs, 1u) << i;
}

// The token is the address of the bucket's free counter: the allocator
// counts a kept sample's free by adding to it, and a dump finds the stack
// from it.
TEST(HeapProfileTable, ATokenCountsFreesAndNamesTheStack) {
  HeapProfileTable t;
  const uintptr_t pcs[] = {0x401000, 0x402000, 0x403000};
  const uintptr_t token = t.RecordAlloc(nullptr, 64, 512, pcs, 3, false);
  ASSERT_EQ(t.RecordAlloc(nullptr, 64, 512, pcs, 3, false), token);
  internal::CountKeptSampleFree(token);
  const std::vector<HeapBucketSnapshot> s = t.Snapshot();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].allocs, 2u);
  EXPECT_EQ(s[0].frees, 1u);
  uintptr_t out[8];
  ASSERT_EQ(HeapProfileTable::StackOfToken(token, out, 8), 3u);
  EXPECT_EQ(std::vector<uintptr_t>(out, out + 3), std::vector<uintptr_t>(pcs, pcs + 3));
}

}  // namespace
}  // namespace libdump::samplers
