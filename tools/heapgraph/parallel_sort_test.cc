#include "parallel_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "threads.h"

namespace libdump::heapgraph {
namespace {

struct Pair {
  uint32_t key;  // many equal keys
  uint32_t tag;  // unique: breaks the ties
};

bool Less(const Pair& a, const Pair& b) { return a.key != b.key ? a.key < b.key : a.tag < b.tag; }

// Every thread count from 1 to 5 and every part count the array allows give
// std::sort's order, for lengths around the part boundaries.
TEST(ParallelSort, SameOrderAsStdSortForAnyThreadCount) {
  std::mt19937 rng(7);
  for (size_t n : {0u, 1u, 2u, 15u, 16u, 17u, 100u, 1001u, 4099u}) {
    std::vector<Pair> input(n);
    for (uint32_t i = 0; i < n; ++i) input[i] = {static_cast<uint32_t>(rng() % 50), i};
    std::shuffle(input.begin(), input.end(), rng);
    std::vector<Pair> expected = input;
    std::sort(expected.begin(), expected.end(), Less);
    for (unsigned threads = 1; threads <= 5; ++threads) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " threads " << threads);
      SetThreads(threads);
      BigArray<Pair> a;
      for (const Pair& p : input) a.push_back(p);
      ParallelSort(a, Less, /*min_part=*/4);
      SetThreads(0);
      ASSERT_EQ(a.size(), n);
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += a[i].key != expected[i].key || a[i].tag != expected[i].tag;
      EXPECT_EQ(wrong, 0u);
    }
  }
}

// Under min_part the array is sorted on the calling thread alone.
TEST(ParallelSort, ShortArraysSortInPlace) {
  SetThreads(3);
  BigArray<Pair> a;
  for (uint32_t i = 0; i < 10; ++i) a.push_back({10 - i, i});
  ParallelSort(a, Less);
  SetThreads(0);
  for (uint32_t i = 0; i < 10; ++i) EXPECT_EQ(a[i].key, i + 1);
}

}  // namespace
}  // namespace libdump::heapgraph
