#include "dominators.h"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace libdump::heapgraph {
namespace {

// T holds an object index or a DFS number: uint32_t below 2^32 - 2 objects
// (WideFor), uint64_t beyond; the builder keeps an object's references below
// 2^32 in the narrow form too. C counts predecessors: uint64_t when the
// references and roots together reach 2^32.
template <typename T, typename C>
void Dominators(HeapGraph& g, const BigArray<T>& out, BigArray<T>& g_idom, const Progress& progress) {
  constexpr T kUnseen = static_cast<T>(kNone);
  const T n = static_cast<T>(g.size());
  const T root = n;  // the super root, node n
  // Every array below is indexed by DFS number (0 = the super root) except
  // dfn, indexed by node: numbering by DFS order keeps the semidominator
  // comparisons plain integer ones.
  BigArray<T> dfn(n + 1, kUnseen);
  BigArray<T> vertex;
  vertex.reserve(n + 1);
  BigArray<T> parent(n + 1, 0);

  // Roots, deduplicated (an object may be several roots).
  std::vector<T> roots;
  for (const Root& r : g.roots) roots.push_back(static_cast<T>(r.object));
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  auto succ = [&](T v) -> std::span<const T> {
    if (v == root) return std::span<const T>(roots);
    return {out.data() + g.out_begin[v], out.data() + g.out_begin[v + 1]};
  };

  // Iterative DFS: (node, next successor) pairs.
  {
    struct Frame {
      T v;
      T k;  // the next successor
    };
    BigArray<Frame> stack;
    ProgressTicker numbered(progress, "dominators: numbering", n);
    dfn[root] = 0;
    vertex.push_back(root);
    stack.push_back({root, 0});
    while (!stack.empty()) {
      big_array::Check();
      auto& [v, k] = stack.back();
      const auto s = succ(v);
      if (k == s.size()) {
        stack.pop_back();
        continue;
      }
      const T w = s[k++];
      if (dfn[w] != kUnseen) continue;
      dfn[w] = static_cast<T>(vertex.size());
      parent[dfn[w]] = dfn[v];
      vertex.push_back(w);
      numbered.Tick(vertex.size() - 1);  // the super root is no object
      stack.push_back({w, 0});
    }
  }
  const T m = static_cast<T>(vertex.size());

  // Predecessors of reached nodes, by DFS number, as a CSR: counts first,
  // then the offsets, then the counts again as each list fills. Offsets past
  // 2^32 are packed (about 4 bytes a vertex still).
  using Offsets = std::conditional_t<sizeof(C) == 4, BigArray<uint32_t>, PackedU64>;
  Offsets pred_begin;
  BigArray<T> pred;
  {
    pred_begin.reserve(size_t{m} + 1);
    BigArray<C> count(m, 0);
    // Two sweeps of the vertices: counting, then filling.
    ProgressTicker swept(progress, "dominators: predecessors", uint64_t{m} * 2);
    for (T i = 0; i < m; ++i) {
      big_array::Check();
      swept.Tick(i);
      for (T w : succ(vertex[i])) ++count[dfn[w]];
    }
    uint64_t total = 0;
    for (T i = 0; i < m; ++i) {
      pred_begin.push_back(static_cast<C>(total));
      total += count[i];
      count[i] = 0;
    }
    pred_begin.push_back(static_cast<C>(total));
    pred.resize(total);
    for (T i = 0; i < m; ++i) {
      big_array::Check();
      swept.Tick(uint64_t{m} + i);
      for (T w : succ(vertex[i])) {
        const T d = dfn[w];
        pred[pred_begin[d] + count[d]++] = i;
      }
    }
  }
  // From here on only DFS numbers: dfn goes before the next arrays come.
  dfn.Free();

  // A vertex waits in one bucket at a time and gets its idom when it leaves
  // it, so idom[] holds the bucket's next link until then (an index an object
  // less than a separate link array).
  BigArray<T> semi(m), label(m), idom(m, 0);
  // The forest of linked vertices. Vertices are linked in decreasing DFS
  // number, each to its DFS parent, so the ones at or above `linked` are in
  // the forest; an unlinked vertex's entry still holds its DFS parent, which
  // is what linking sets it to: one array serves for both (an index an object
  // less). Path compression changes linked vertices' entries only.
  BigArray<T>& ancestor = parent;
  T linked = m;
  BigArray<T> bucket_head(m, kUnseen);
  for (T i = 0; i < m; ++i) semi[i] = label[i] = i;

  // eval with path compression, iterative: climb to the forest root first,
  // then compress top-down.
  BigArray<T> path;
  auto eval = [&](T v) -> T {
    if (v < linked) return v;
    path.clear();
    T x = v;
    while (ancestor[x] >= linked) {
      path.push_back(x);
      x = ancestor[x];
    }
    for (size_t k = path.size(); k-- > 0;) {
      const T y = path[k];
      const T a = ancestor[y];
      if (semi[label[a]] < semi[label[y]]) label[y] = label[a];
      ancestor[y] = ancestor[a];
    }
    return label[v];
  };

  ProgressTicker semidominated(progress, "dominators: semidominators", m - 1);
  for (T w = m - 1; w > 0; --w) {
    big_array::Check();
    semidominated.Tick(m - w);
    for (uint64_t e = pred_begin[w], end = pred_begin[w + 1]; e < end; ++e) {
      const T u = eval(pred[e]);
      if (semi[u] < semi[w]) semi[w] = semi[u];
    }
    idom[w] = bucket_head[semi[w]];  // the bucket's next link
    bucket_head[semi[w]] = w;
    const T p = parent[w];
    linked = w;  // ancestor[w] is p already
    for (T v = bucket_head[p], next; v != kUnseen; v = next) {
      next = idom[v];
      const T u = eval(v);
      idom[v] = semi[u] < semi[v] ? u : p;
    }
    bucket_head[p] = kUnseen;
  }
  for (T w = 1; w < m; ++w) {
    if (idom[w] != semi[w]) idom[w] = idom[idom[w]];
  }
  pred.Free();
  pred_begin = Offsets();
  bucket_head.Free();
  parent.Free();
  label.Free();
  semi.Free();

  g_idom.assign(n, kUnseen);
  g.retained.resize(n);
  // Every object's own size, then the reached vertices' sweep.
  ProgressTicker summed(progress, "dominators: retained sizes", uint64_t{n} + m - 1);
  for (T i = 0; i < n; ++i) {
    big_array::Check();
    summed.Tick(i);
    g.retained[i] = g.Size(i);
  }
  // Children after parents in DFS order, so sizes flow up in one sweep.
  for (T w = m - 1; w > 0; --w) {
    big_array::Check();
    summed.Tick(uint64_t{n} + m - w);
    const T v = vertex[w];
    const T d = idom[w];
    if (d == 0) {
      g_idom[v] = static_cast<T>(kSuperRoot);
    } else {
      g_idom[v] = vertex[d];
      g.retained[vertex[d]] += g.retained[v];
    }
  }
  g.reachable_objects = m - 1;
  g.reachable_bytes = 0;
  for (T w = 1; w < m; ++w) g.reachable_bytes += g.Size(vertex[w]);
}

}  // namespace

void ComputeDominators(HeapGraph& g, const Progress& progress) {
  g.idom.Reset(g.out.wide());
  // The counts of predecessors stay in 32 bits unless the references (and
  // roots) together do not.
  const bool wide_counts = g.out.size() + g.roots.size() >= UINT32_MAX;
  g.out.Visit([&](const auto& out) {
    using T = std::remove_cvref_t<decltype(out[0])>;
    BigArray<T>& idom = g.idom.storage<T>();
    if (wide_counts) {
      Dominators<T, uint64_t>(g, out, idom, progress);
    } else {
      Dominators<T, T>(g, out, idom, progress);
    }
  });
}

}  // namespace libdump::heapgraph
