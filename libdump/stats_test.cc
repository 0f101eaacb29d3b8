#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "libdump/heap.h"

namespace libdump {
namespace {

TEST(HeapStats, CountsMallocsFreesAndBytes) {
  const HeapStats a = GetHeapStats();
  std::vector<void*> v;
  for (int i = 0; i < 1000; ++i) v.push_back(Allocate(100));  // 112-byte slots
  void* big = Allocate(100000);                                // 13 pages
  const HeapStats b = GetHeapStats();
  EXPECT_EQ(b.mallocs - a.mallocs, 1001u);
  EXPECT_EQ(b.frees, a.frees);
  EXPECT_EQ(b.live_objects - a.live_objects, 1001u);
  EXPECT_EQ(b.bytes_in_use - a.bytes_in_use, 1000u * 112 + 13 * 8192);
  EXPECT_EQ(b.total_allocated_bytes - a.total_allocated_bytes, 1000u * 112 + 13 * 8192);
  EXPECT_GE(b.arenas, 1u);
  EXPECT_GE(b.bytes_reserved, b.arenas * (64u << 20));
  EXPECT_GT(b.spans, a.spans);
  EXPECT_GT(b.metadata_bytes, 0u);
  // Frees from another thread are counted too.
  std::thread([&] { for (void* p : v) Free(p); }).join();
  Free(big);
  const HeapStats c = GetHeapStats();
  EXPECT_EQ(c.frees - a.frees, 1001u);
  EXPECT_EQ(c.live_objects, a.live_objects);
  EXPECT_EQ(c.bytes_in_use, a.bytes_in_use);
  EXPECT_EQ(c.total_allocated_bytes, b.total_allocated_bytes);
}

// The fast paths keep no counters: the counts come from the lists (pushes
// and length) and the batches fetched and returned. Each step below moves a
// different one of them; each check fails if its part of the sum is dropped
// or counted twice.
TEST(HeapStats, CountsAreExactThroughTheListsAndThreadExit) {
  constexpr size_t kSize = 48;  // its own class, 48-byte slots
  std::vector<void*> keep;
  const HeapStats a = GetHeapStats();
  std::thread([&] {
    std::vector<void*> v;
    for (int i = 0; i < 300; ++i) v.push_back(Allocate(kSize));  // fetches batches
    for (int i = 0; i < 100; ++i) Free(v[i]);  // the list overflows: batches go back
    for (int i = 0; i < 100; ++i) v[i] = Allocate(kSize);  // pops, then fetches
    for (int r = 0; r < 10000; ++r) {  // churn: push, pop
      Free(v[r % 300]);
      v[r % 300] = Allocate(kSize);
    }
    for (int i = 0; i < 30; ++i) Free(v[i]);  // left on the list at exit
    const HeapStats b = GetHeapStats();
    EXPECT_EQ(b.mallocs - a.mallocs, 10400u);
    EXPECT_EQ(b.frees - a.frees, 10130u);
    EXPECT_EQ(b.live_objects - a.live_objects, 270u);
    EXPECT_EQ(b.bytes_in_use - a.bytes_in_use, 270u * kSize);
    EXPECT_EQ(b.total_allocated_bytes - a.total_allocated_bytes, 10400u * kSize);
    keep.assign(v.begin() + 30, v.end());
  }).join();  // the exit gives the list's slots back
  const HeapStats c = GetHeapStats();
  EXPECT_EQ(c.mallocs - a.mallocs, 10400u);
  EXPECT_EQ(c.frees - a.frees, 10130u);
  EXPECT_EQ(c.bytes_in_use - a.bytes_in_use, 270u * kSize);
  for (void* p : keep) Free(p);
  const HeapStats d = GetHeapStats();
  EXPECT_EQ(d.frees - a.frees, 10400u);
  EXPECT_EQ(d.live_objects, a.live_objects);
}

TEST(HeapStats, ReleasedMemoryIsCounted) {
  const HeapStats a = GetHeapStats();
  void* big = Allocate(size_t{100} << 20);
  Free(big);
  // Kept for reuse (the hard limit follows the recent peak in use) until
  // released.
  EXPECT_GE(GetHeapStats().bytes_free_committed, size_t{100} << 20);
  EXPECT_GE(ReleaseFreeMemory(), size_t{100} << 20);
  const HeapStats b = GetHeapStats();
  EXPECT_GE(b.bytes_returned, size_t{100} << 20);
  EXPECT_LT(b.bytes_free_committed, size_t{100} << 20);
  EXPECT_GE(b.bytes_reserved, a.bytes_reserved);
}

}  // namespace
}  // namespace libdump
