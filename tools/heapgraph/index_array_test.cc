// Indices in 4 and 8 bytes: the sentinels survive both widths, the two
// widths compare by value, and arrays and offsets past 2^32 entries work
// (sparse files: only the pages written are real).
#include "index_array.h"

#include <gtest/gtest.h>

#include <vector>

#include "big_array.h"
#include "heap_graph.h"

namespace libdump::heapgraph {
namespace {

constexpr uint64_t k2to32 = uint64_t{1} << 32;

TEST(IndexArray, SentinelsKeepTheirMeaningInFourBytes) {
  EXPECT_EQ(FromNarrow(kNarrowNone), kNone);
  EXPECT_EQ(FromNarrow(kNarrowSuperRoot), kSuperRoot);
  EXPECT_EQ(FromNarrow(kNarrowSuperRoot - 1), uint64_t{UINT32_MAX - 2});
  EXPECT_EQ(FromNarrow(0), 0u);
  IndexArray a;
  EXPECT_FALSE(a.wide());
  for (Index v : {Index{0}, Index{7}, Index{UINT32_MAX - 2}, kSuperRoot, kNone}) a.push_back(v);
  EXPECT_EQ(a.entry_bytes(), 4u);
  EXPECT_EQ(a, (std::vector<Index>{0, 7, UINT32_MAX - 2, kSuperRoot, kNone}));
  a.Set(1, kNone);
  EXPECT_EQ(a[1], kNone);
}

TEST(IndexArray, WidthsCompareByValueAndWidenKeepsThem) {
  IndexArray narrow, wide(true);
  for (Index v : {Index{3}, kSuperRoot, Index{0}, kNone}) {
    narrow.push_back(v);
    wide.push_back(v);
  }
  EXPECT_EQ(wide.entry_bytes(), 8u);
  EXPECT_TRUE(narrow == wide);
  wide.Set(0, 4);
  EXPECT_FALSE(narrow == wide);
  narrow.Widen();
  EXPECT_TRUE(narrow.wide());
  EXPECT_EQ(narrow, (std::vector<Index>{3, kSuperRoot, 0, kNone}));
  narrow.push_back(k2to32 + 5);  // only 8 bytes hold it
  EXPECT_EQ(narrow[4], k2to32 + 5);
}

TEST(IndexArray, SpansYieldIndicesOfEitherWidth) {
  for (bool w : {false, true}) {
    IndexArray a(w);
    for (Index v = 0; v < 10; ++v) a.push_back(v * 3);
    const IndexSpan s = a.span(2, 5);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[1], 9u);
    EXPECT_EQ(std::vector<Index>(s.begin(), s.end()), (std::vector<Index>{6, 9, 12})) << w;
    EXPECT_TRUE(a.span(4, 4).empty());
  }
}

TEST(IndexArray, VisitGivesTheStorageOfTheWidth) {
  IndexArray a(true);
  a.push_back(5);
  EXPECT_EQ(a.Visit([](auto& v) { return sizeof(v[0]); }), 8u);
  a.Reset(false);
  EXPECT_TRUE(a.empty());
  a.push_back(5);
  EXPECT_EQ(a.Visit([](auto& v) { return sizeof(v[0]); }), 4u);
  EXPECT_EQ(&a.storage<uint32_t>(), &a.narrow());
}

// 4-byte storage up to 2^32 - 3 objects; from 2^32 - 2 on the indices 0..n-1,
// the super root's number n and the two sentinels no longer fit.
TEST(IndexArray, WidthSwitchesAtTwoToThe32MinusTwoObjects) {
  EXPECT_FALSE(WideFor(0));
  EXPECT_FALSE(WideFor(k2to32 - 3));
  EXPECT_TRUE(WideFor(k2to32 - 2));
  EXPECT_TRUE(WideFor(k2to32 * 4));
}

struct Budget {
  explicit Budget(uint64_t bytes) { SetMemoryBudget(bytes, ::testing::TempDir()); }
  ~Budget() { SetMemoryBudget(0, ""); }
};

// Past 2^32 entries, in files of which only the written pages are real (a
// 1 MiB budget puts every large array in a file): 8-byte indices beyond 2^32,
// and an object whose references start and end past offset 2^32.
TEST(IndexArray, SparseArraysPastTwoToThe32Entries) {
  Budget budget(1 << 20);
  IndexArray wide(true);
  wide.AssignZeros(k2to32 + 3);
  ASSERT_TRUE(wide.in_file());
  wide.Set(k2to32 + 1, k2to32 + 7);
  wide.Set(k2to32 + 2, kSuperRoot);
  EXPECT_EQ(wide[k2to32 + 1], k2to32 + 7);
  EXPECT_EQ(wide[k2to32 + 2], kSuperRoot);
  EXPECT_EQ(wide[5], 0u);
  wide.Free();

  // 66 objects: 63 has 2^32 + 1 references (all to object 0), 64 has three
  // and 65 has two, stored narrow after offset 2^32. The jump falls between
  // two blocks of 64 offsets, so they stay packed.
  HeapGraph g;
  for (uint64_t k = 0; k < 66; ++k) g.ids.push_back(0x10 * (k + 1));
  g.out.AssignZeros(k2to32 + 6);
  ASSERT_TRUE(g.out.in_file());
  for (int k = 0; k < 64; ++k) g.out_begin.push_back(0);
  for (uint64_t o : {k2to32 + 1, k2to32 + 4, k2to32 + 6}) g.out_begin.push_back(o);
  const std::vector<Index> targets{65, 64, 0, 64, 65};
  for (size_t k = 0; k < targets.size(); ++k) g.out.Set(k2to32 + 1 + k, targets[k]);
  EXPECT_EQ(g.Out(63).size(), k2to32 + 1);
  EXPECT_EQ(g.Out(63)[k2to32], 0u);
  const IndexSpan a = g.Out(64), b = g.Out(65);
  EXPECT_EQ(std::vector<Index>(a.begin(), a.end()), (std::vector<Index>{65, 64, 0}));
  EXPECT_EQ(std::vector<Index>(b.begin(), b.end()), (std::vector<Index>{64, 65}));
  EXPECT_TRUE(g.out_begin.packed());
  EXPECT_EQ(g.out_begin[66], k2to32 + 6);
}

}  // namespace
}  // namespace libdump::heapgraph
