// The check the heapgraph tests share: two graphs of the same heap, opened
// or analysed two ways (in RAM and under a budget, one thread and several,
// computed and read back from an index), give the same references and the
// same answers. Index arrays compare by value, whatever their widths.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>

#include "heap_graph.h"

namespace libdump::heapgraph::testing {

// Element by element, for arrays without an operator== (PackedU64).
template <typename A>
bool SameValues(const A& a, const A& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// The reference CSR and everything Analyze computes.
inline void ExpectSameAnalysis(const HeapGraph& a, const HeapGraph& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(SameValues(a.out_begin, b.out_begin));
  EXPECT_TRUE(a.out == b.out);
  EXPECT_TRUE(a.weak_edges == b.weak_edges);
  EXPECT_TRUE(a.idom == b.idom);
  EXPECT_TRUE(a.retained == b.retained);
  EXPECT_TRUE(a.path_parent == b.path_parent);
  EXPECT_EQ(a.top_retainers, b.top_retainers);
  EXPECT_EQ(a.reachable_bytes, b.reachable_bytes);
  EXPECT_EQ(a.reachable_objects, b.reachable_objects);
  EXPECT_EQ(a.include_own, b.include_own);
  EXPECT_EQ(a.own_objects, b.own_objects);
  EXPECT_EQ(a.own_bytes, b.own_bytes);
  ASSERT_EQ(a.classes.size(), b.classes.size());
  for (size_t c = 0; c < a.classes.size(); ++c) {
    EXPECT_EQ(a.classes[c].count, b.classes[c].count) << c;
    EXPECT_EQ(a.classes[c].own, b.classes[c].own) << c;
    EXPECT_EQ(a.classes[c].bytes, b.classes[c].bytes) << c;
    EXPECT_EQ(a.classes[c].retained, b.classes[c].retained) << c;
  }
}

}  // namespace libdump::heapgraph::testing
