// Find and FindContaining against a scan of every object, on ids packed in
// file order (the search by blocks) and on ids the loader had to sort.
#include "heap_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace libdump::heapgraph {
namespace {

Index ScanContaining(const HeapGraph& g, uint64_t p) {
  Index best = kNone;
  for (Index i = 0; i < g.size(); ++i) {
    if (g.ids[i] <= p && (best == kNone || g.ids[i] > g.ids[best])) best = i;
  }
  return best != kNone && p - g.ids[best] < std::max<uint64_t>(g.Size(best), 1) ? best : kNone;
}

TEST(HeapGraph, SearchesMatchAScan) {
  for (bool shuffled : {false, true}) {
    std::mt19937_64 rng(shuffled ? 2 : 1);
    // 1000 objects (15 blocks of 64 and a part), gaps between them, some
    // of size 0.
    std::vector<uint64_t> ids;
    uint64_t at = 0x1000;
    for (int i = 0; i < 1000; ++i) {
      ids.push_back(at);
      at += 8 + rng() % 64;
    }
    if (shuffled) std::shuffle(ids.begin(), ids.end(), rng);
    HeapGraph g;
    GraphBuilder b(g);
    for (uint64_t id : ids) b.AddObject(id, 0, rng() % 5 == 0 ? 0 : 8 + rng() % 40, 0);
    b.FinishObjects();
    b.FinishEdges();
    ASSERT_EQ(g.by_id.empty(), !shuffled);
    if (!shuffled) {
      ASSERT_TRUE(g.ids.packed());  // the search by blocks
    }
    std::vector<uint64_t> probes = {0, 0xfff, 0x1000, at, at + 100, UINT64_MAX};
    for (uint64_t id : ids) {
      probes.push_back(id);
      probes.push_back(id - 1);
      probes.push_back(id + 1 + rng() % 48);
    }
    for (uint64_t p : probes) {
      const Index c = ScanContaining(g, p);
      EXPECT_EQ(FindContaining(g, p), c) << std::hex << p;
      const auto exact = std::find(ids.begin(), ids.end(), p);
      EXPECT_EQ(g.Find(p), exact == ids.end() ? kNone : static_cast<Index>(exact - ids.begin())) << std::hex << p;
    }
  }
}

}  // namespace
}  // namespace libdump::heapgraph
