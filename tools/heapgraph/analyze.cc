#include "analyze.h"

#include <algorithm>
#include <type_traits>

#include "dominator_tree.h"
#include "dominators.h"
#include "paths.h"

namespace libdump::heapgraph {
namespace {

// Retained bytes of each class: the retained sizes of its instances that no
// other instance of the class dominates (MAT's "retained heap" of a class).
// Walks the dominator tree depth first with a count of the open instances of
// each class.
// T: the width of g.idom (index_array.h).
template <typename T>
void ClassRetained(HeapGraph& g, const BigArray<T>& idom, const Progress& progress) {
  const T n = static_cast<T>(g.size());
  // Two sweeps build the tree's children, then each node is entered once.
  ProgressTicker swept(progress, "class retained sizes", uint64_t{n} * 3);
  const DominatorTree<T> tree = DominatorChildren(g, idom, &swept);
  const BigArray<T>& begin = tree.begin;
  const BigArray<T>& child = tree.child;
  std::vector<uint64_t> open(g.classes.size(), 0);
  // (node, next child); a node is entered when pushed, left when popped.
  struct Frame {
    T v;
    T k;  // the next child
  };
  BigArray<Frame> stack;
  stack.push_back({n, begin[n]});
  uint64_t entered = uint64_t{n} * 2;
  while (!stack.empty()) {
    big_array::Check();
    auto& [v, k] = stack.back();
    if (k == begin[v + 1]) {
      if (v != n) --open[g.cls[v]];
      stack.pop_back();
      continue;
    }
    const T w = child[k++];
    const uint32_t c = g.cls[w];
    if (open[c]++ == 0) g.classes[c].retained += g.retained[w];
    swept.Tick(++entered);
    stack.push_back({w, begin[w]});
  }
}

void ClassRetained(HeapGraph& g, const Progress& progress) {
  g.idom.Visit([&](const auto& idom) { ClassRetained(g, idom, progress); });
}

}  // namespace

void Analyze(HeapGraph& g, const Progress& progress) {
  for (ClassInfo& c : g.classes) c.count = c.bytes = c.retained = 0;
  for (Index i = 0; i < g.size(); ++i) {
    big_array::Check();
    ClassInfo& c = g.classes[g.cls[i]];
    ++c.count;
    c.bytes += g.Size(i);
  }
  // The dominators as a whole (their sub-phases report "dominators: ...");
  // paths and class retained sizes report their names as they start.
  progress("dominators", 0);
  ComputeDominators(g, progress);
  ComputePaths(g, progress);
  ClassRetained(g, progress);
  // Sorted as (retained, object) pairs: comparing objects by their retained
  // sizes would read those all over the array, a page per comparison past
  // the budget's checks.
  struct Top {
    uint64_t retained;
    Index v;
  };
  BigArray<Top> top;
  for (Index v = 0; v < g.size(); ++v) {
    big_array::Check();
    if (g.idom[v] == kSuperRoot) top.push_back({g.retained[v], v});
  }
  std::sort(top.begin(), top.end(), [](const Top& a, const Top& b) {
    big_array::Check();
    return a.retained != b.retained ? a.retained > b.retained : a.v < b.v;
  });
  g.top_retainers.Reset(g.idom.wide());
  for (const Top& t : top) g.top_retainers.push_back(t.v);
}

Suspects LeakSuspects(const HeapGraph& g, double fraction) {
  Suspects s;
  const double limit = fraction * static_cast<double>(g.reachable_bytes);
  for (Index v = 0; v < g.size(); ++v) {
    if (g.idom[v] != kNone && static_cast<double>(g.retained[v]) > limit) s.objects.push_back(v);
  }
  std::sort(s.objects.begin(), s.objects.end(), [&](Index a, Index b) {
    return g.retained[a] != g.retained[b] ? g.retained[a] > g.retained[b] : a < b;
  });
  for (uint32_t c = 0; c < g.classes.size(); ++c) {
    if (static_cast<double>(g.classes[c].retained) > limit) s.classes.push_back(c);
  }
  std::sort(s.classes.begin(), s.classes.end(),
            [&](uint32_t a, uint32_t b) { return g.classes[a].retained > g.classes[b].retained; });
  return s;
}

std::vector<Index> Dominated(const HeapGraph& g, Index obj) {
  std::vector<Index> out;
  for (Index v = 0; v < g.size(); ++v) {
    if (g.idom[v] == obj) out.push_back(v);
  }
  std::sort(out.begin(), out.end(), [&](Index a, Index b) {
    return g.retained[a] != g.retained[b] ? g.retained[a] > g.retained[b] : a < b;
  });
  return out;
}

}  // namespace libdump::heapgraph
