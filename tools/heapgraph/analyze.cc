#include "analyze.h"

#include <algorithm>
#include <type_traits>

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
void ClassRetained(HeapGraph& g, const BigArray<T>& idom) {
  constexpr T kNo = static_cast<T>(kNone), kSuper = static_cast<T>(kSuperRoot);
  const T n = static_cast<T>(g.size());
  // Children CSR of the dominator tree, the super root being node n.
  BigArray<T> begin(n + 2, 0);
  for (T v = 0; v < n; ++v) {
    big_array::Check();
    const T d = idom[v];
    if (d == kNo) continue;
    ++begin[(d == kSuper ? n : d) + 1];
  }
  for (T i = 0; i <= n; ++i) begin[i + 1] += begin[i];
  BigArray<T> child(begin[n + 1]);
  {
    BigArray<T> fill(n + 1);
    std::copy(begin.begin(), begin.end() - 1, fill.begin());
    for (T v = 0; v < n; ++v) {
      big_array::Check();
      const T d = idom[v];
      if (d == kNo) continue;
      child[fill[d == kSuper ? n : d]++] = v;
    }
  }
  std::vector<uint64_t> open(g.classes.size(), 0);
  // (node, next child); a node is entered when pushed, left when popped.
  struct Frame {
    T v;
    T k;  // the next child
  };
  BigArray<Frame> stack;
  stack.push_back({n, begin[n]});
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
    stack.push_back({w, begin[w]});
  }
}

void ClassRetained(HeapGraph& g) {
  g.idom.Visit([&](const auto& idom) { ClassRetained(g, idom); });
}

}  // namespace

void Analyze(HeapGraph& g, const std::function<void(const std::string&)>& step) {
  auto say = [&](const std::string& s) {
    if (step) step(s);
  };
  for (ClassInfo& c : g.classes) c.count = c.bytes = c.retained = 0;
  for (Index i = 0; i < g.size(); ++i) {
    big_array::Check();
    ClassInfo& c = g.classes[g.cls[i]];
    ++c.count;
    c.bytes += g.Size(i);
  }
  say("dominators");
  ComputeDominators(g);
  say("paths");
  ComputePaths(g);
  say("class retained sizes");
  ClassRetained(g);
  g.top_retainers.Reset(g.idom.wide());
  g.top_retainers.Visit([&](auto& top) {
    using T = std::remove_cvref_t<decltype(top[0])>;
    const BigArray<T>& idom = g.idom.storage<T>();
    for (T v = 0; v < g.size(); ++v) {
      if (idom[v] == static_cast<T>(kSuperRoot)) top.push_back(v);
    }
    std::sort(top.begin(), top.end(), [&](T a, T b) {
      return g.retained[a] != g.retained[b] ? g.retained[a] > g.retained[b] : a < b;
    });
  });
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
