// Dominators, retained sizes and paths on hand-built graphs whose answers are
// worked out in testdata/README.md ("Heap graphs"), and on random graphs
// against the definition (an object retains what becomes unreachable
// without it).
#include "dominators.h"

#include <gtest/gtest.h>

#include <random>

#include "analyze.h"
#include "dominator_tree.h"
#include "paths.h"

namespace libdump::heapgraph {
namespace {

ClassInfo Class(const std::string& name) {
  ClassInfo c;
  c.name = name;
  return c;
}

Root RootOf(Index object) {
  Root r;
  r.object = object;
  return r;
}

struct Edge {
  Index from, to;
  bool weak = false;
};

// Objects 0..n-1 with ids 0x1000 + 16 i, of class cls[i] (default 0);
// `wide`: 8-byte index storage, as from 2^32 - 2 objects on.
HeapGraph Build(const std::vector<uint64_t>& sizes, const std::vector<Edge>& edges, const std::vector<Index>& roots,
                const std::vector<uint32_t>& cls = {}, bool wide = false) {
  HeapGraph g;
  g.wide = wide;
  uint32_t nclasses = 1;
  for (uint32_t c : cls) nclasses = std::max(nclasses, c + 1);
  for (uint32_t c = 0; c < nclasses; ++c) g.classes.push_back(Class("C" + std::to_string(c)));
  GraphBuilder b(g);
  for (size_t i = 0; i < sizes.size(); ++i) b.AddObject(0x1000 + 16 * i, cls.empty() ? 0 : cls[i], sizes[i], i);
  b.FinishObjects();
  for (Index i = 0; i < sizes.size(); ++i) {
    b.BeginEdges(i);
    for (const Edge& e : edges) {
      if (e.from == i) b.Edge(e.to, e.weak);
    }
  }
  b.FinishEdges();
  g.root_kinds = {"test"};
  for (Index r : roots) g.roots.push_back(RootOf(r));
  Analyze(g);
  return g;
}

// Graph A of testdata/README.md: R -> A, B; A, B -> C -> D -> E -> C; F alone.
TEST(Dominators, GraphA) {
  for (bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "wide" : "narrow");
    enum { R, A, B, C, D, E, F };
    const HeapGraph g = Build({10, 20, 30, 40, 50, 60, 70},
                              {{R, A}, {R, B}, {A, C}, {B, C}, {C, D}, {D, E}, {E, C}}, {R}, {}, wide);
    EXPECT_EQ(g.out.wide(), wide);
    EXPECT_EQ(g.idom.wide(), wide);
    EXPECT_EQ(g.path_parent.wide(), wide);
    EXPECT_EQ(g.idom, (std::vector<Index>{kSuperRoot, R, R, R, C, D, kNone}));
    EXPECT_EQ(g.retained, (std::vector<uint64_t>{210, 20, 30, 150, 110, 60, 70}));
    EXPECT_EQ(g.reachable_bytes, 210u);
    EXPECT_EQ(g.reachable_objects, 6u);
    EXPECT_EQ(PathFromRoot(g, E), (std::vector<Index>{R, A, C, D, E}));
    EXPECT_TRUE(PathFromRoot(g, F).empty());
    EXPECT_EQ(Dominated(g, R), (std::vector<Index>{C, B, A}));
    EXPECT_EQ(g.top_retainers, (std::vector<Index>{R}));
  }
}

// Graph B: two roots X, Y share S; X alone holds U.
TEST(Dominators, GraphB) {
  for (bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "wide" : "narrow");
    enum { X, Y, S, T, U };
    const HeapGraph g = Build({1, 2, 4, 8, 16}, {{X, S}, {Y, S}, {S, T}, {X, U}}, {X, Y}, {}, wide);
    EXPECT_EQ(g.idom, (std::vector<Index>{kSuperRoot, kSuperRoot, kSuperRoot, S, X}));
    EXPECT_EQ(g.retained, (std::vector<uint64_t>{17, 2, 12, 8, 16}));
    EXPECT_EQ(PathFromRoot(g, T), (std::vector<Index>{X, S, T}));
    EXPECT_EQ(g.top_retainers, (std::vector<Index>{X, S, Y}));
  }
}

// Graph C: W -> V weakly and W -> Q -> V strongly. Paths skip the weak
// reference; dominators count it (as VisualVM and MAT do).
TEST(Dominators, GraphCWeakReference) {
  for (bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "wide" : "narrow");
    enum { W, V, Q };
    const HeapGraph g = Build({5, 7, 11}, {{W, V, true}, {W, Q}, {Q, V}}, {W}, {}, wide);
    EXPECT_EQ(g.idom, (std::vector<Index>{kSuperRoot, W, W}));
    EXPECT_EQ(g.retained, (std::vector<uint64_t>{23, 7, 11}));
    EXPECT_EQ(PathFromRoot(g, V), (std::vector<Index>{W, Q, V}));
  }
}

// Graph D: class retained sizes count nested instances once.
TEST(Dominators, GraphDClassRetained) {
  for (bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "wide" : "narrow");
    enum { r, n1, n2, l1, l2 };
    const HeapGraph g = Build({10, 10, 10, 3, 3}, {{r, n1}, {n1, n2}, {n2, l1}, {r, l2}}, {r}, {0, 0, 0, 1, 1}, wide);
    EXPECT_EQ(g.retained, (std::vector<uint64_t>{36, 23, 13, 3, 3}));
    EXPECT_EQ(g.classes[0].retained, 36u);
    EXPECT_EQ(g.classes[1].retained, 6u);
    EXPECT_EQ(g.classes[0].count, 3u);
    EXPECT_EQ(g.classes[1].bytes, 6u);
  }
}

// Ids out of file order (HotSpot writes them so): lookups go through by_id.
TEST(GraphBuilder, FindsIdsOutOfOrder) {
  HeapGraph g;
  g.classes.push_back(Class("C"));
  GraphBuilder b(g);
  for (uint64_t id : {0x300, 0x100, 0x200}) b.AddObject(id, 0, 16, 0);
  b.FinishObjects();
  b.FinishEdges();
  EXPECT_EQ(g.by_id, (std::vector<Index>{1, 2, 0}));
  EXPECT_FALSE(g.by_id.wide());
  HeapGraph w;
  w.wide = true;
  w.classes.push_back(Class("C"));
  GraphBuilder bw(w);
  for (uint64_t id : {0x300, 0x100, 0x200}) bw.AddObject(id, 0, 16, 0);
  bw.FinishObjects();
  bw.FinishEdges();
  EXPECT_TRUE(w.by_id.wide());
  EXPECT_EQ(w.by_id, (std::vector<Index>{1, 2, 0}));
  EXPECT_EQ(w.Find(0x200), 2u);
  EXPECT_EQ(g.Find(0x200), 2u);
  EXPECT_EQ(g.Find(0x208), kNone);
  EXPECT_EQ(FindContaining(g, 0x30f), 0u);
  EXPECT_EQ(FindContaining(g, 0x310), kNone);
  EXPECT_EQ(FindContaining(g, 0xff), kNone);
  HeapGraph dup;
  dup.classes.push_back(Class("C"));
  GraphBuilder d(dup);
  d.AddObject(0x100, 0, 8, 0);
  d.AddObject(0x100, 0, 8, 1);
  EXPECT_THROW(d.FinishObjects(), std::runtime_error);
}

// A long chain: no recursion anywhere.
TEST(Dominators, DeepChain) {
  const size_t n = 300000;  // far deeper than a recursive DFS survives
  for (bool wide : {false, true}) {
    HeapGraph g;
    g.wide = wide;
    g.classes.push_back(Class("Link"));
    GraphBuilder b(g);
    for (size_t i = 0; i < n; ++i) b.AddObject(8 * (i + 1), 0, 1, i);
    b.FinishObjects();
    for (Index i = 0; i < n; ++i) {
      b.BeginEdges(i);
      if (i + 1 < n) b.Edge(i + 1);
    }
    b.FinishEdges();
    g.roots.push_back(RootOf(0));
    Analyze(g);
    EXPECT_EQ(g.retained[0], n);
    EXPECT_EQ(g.retained[n - 1], 1u);
    EXPECT_EQ(g.idom[n - 1], n - 2);
    EXPECT_EQ(PathFromRoot(g, n - 1).size(), n);
  }
}

// Random graphs: retained(v) = size(v) + sizes of what only v keeps
// reachable, computed by removing v and searching again.
TEST(Dominators, RandomGraphsMatchTheDefinition) {
  std::mt19937 rng(22);
  for (int round = 0; round < 40; ++round) {
    const Index n = 2 + rng() % 60;
    std::vector<uint64_t> sizes(n);
    for (auto& s : sizes) s = 1 + rng() % 100;
    std::vector<Edge> edges;
    const int m = static_cast<int>(rng() % (3 * n));
    for (int k = 0; k < m; ++k) edges.push_back({static_cast<Index>(rng() % n), static_cast<Index>(rng() % n)});
    std::vector<Index> roots;
    for (Index k = 0, r = 1 + rng() % 3; k < r; ++k) roots.push_back(rng() % n);
    const HeapGraph g = Build(sizes, edges, roots);
    // 8-byte storage gives the same answers.
    const HeapGraph w = Build(sizes, edges, roots, {}, true);
    ASSERT_TRUE(w.idom.wide());
    EXPECT_TRUE(w.idom == g.idom);
    EXPECT_TRUE(w.path_parent == g.path_parent);
    EXPECT_TRUE(w.retained == g.retained);
    EXPECT_EQ(w.top_retainers, g.top_retainers);
    EXPECT_EQ(w.classes[0].retained, g.classes[0].retained);
    // The tree's children CSR (dominator_tree.h), both widths: each node's
    // children are the objects whose idom it is, in increasing index.
    auto children_match = [&](const HeapGraph& h) {
      h.idom.Visit([&](const auto& idom) {
        const auto tree = DominatorChildren(h, idom);
        ASSERT_EQ(tree.begin.size(), uint64_t{n} + 2);
        for (Index v = 0; v <= n; ++v) {
          std::vector<Index> want, got;
          for (Index i = 0; i < n; ++i) {
            if (h.idom[i] == (v == n ? kSuperRoot : v)) want.push_back(i);
          }
          for (uint64_t k = tree.begin[v]; k < tree.begin[v + 1]; ++k) got.push_back(tree.child[k]);
          EXPECT_EQ(got, want) << v;
        }
      });
    };
    children_match(g);
    children_match(w);
    auto reach = [&](Index removed) {
      std::vector<bool> seen(n, false);
      std::vector<Index> stack;
      for (Index r : roots) {
        if (r != removed && !seen[r]) {
          seen[r] = true;
          stack.push_back(r);
        }
      }
      while (!stack.empty()) {
        const Index v = stack.back();
        stack.pop_back();
        for (const Edge& e : edges) {
          if (e.from == v && e.to != removed && !seen[e.to]) {
            seen[e.to] = true;
            stack.push_back(e.to);
          }
        }
      }
      return seen;
    };
    const std::vector<bool> all = reach(kNone);
    for (Index v = 0; v < n; ++v) {
      if (!all[v]) {
        EXPECT_EQ(g.idom[v], kNone);
        continue;
      }
      const std::vector<bool> without = reach(v);
      uint64_t want = 0;
      for (Index w = 0; w < n; ++w) {
        if (all[w] && !without[w]) want += sizes[w];
      }
      EXPECT_EQ(g.retained[v], want) << "round " << round << " object " << v;
    }
  }
}

}  // namespace
}  // namespace libdump::heapgraph
