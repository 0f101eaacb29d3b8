#include "dominators.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace libdump::heapgraph {
namespace {

constexpr uint32_t kUnseen = UINT32_MAX;

}  // namespace

void ComputeDominators(HeapGraph& g, const Progress& progress) {
  const Index n = static_cast<Index>(g.size());
  const Index root = n;  // the super root, node n
  // Every array below is indexed by DFS number (0 = the super root) except
  // dfn, indexed by node: numbering by DFS order keeps the semidominator
  // comparisons plain integer ones.
  BigArray<uint32_t> dfn(n + 1, kUnseen);
  BigArray<Index> vertex;
  vertex.reserve(n + 1);
  BigArray<uint32_t> parent(n + 1, 0);

  // Roots, deduplicated (an object may be several roots).
  std::vector<Index> roots;
  for (const Root& r : g.roots) roots.push_back(r.object);
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  auto succ = [&](Index v) -> std::span<const Index> { return v == root ? std::span<const Index>(roots) : g.Out(v); };

  // Iterative DFS: (node, next successor) pairs.
  {
    struct Frame {
      Index v;
      uint32_t k;  // the next successor
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
      const Index w = s[k++];
      if (dfn[w] != kUnseen) continue;
      dfn[w] = static_cast<uint32_t>(vertex.size());
      parent[dfn[w]] = dfn[v];
      vertex.push_back(w);
      numbered.Tick(vertex.size() - 1);  // the super root is no object
      stack.push_back({w, 0});
    }
  }
  const uint32_t m = static_cast<uint32_t>(vertex.size());

  // Predecessors of reached nodes, by DFS number, as a CSR.
  BigArray<uint32_t> pred_begin(m + 1, 0);
  BigArray<uint32_t> pred;
  {
    // Two sweeps of the vertices: counting, then filling.
    ProgressTicker swept(progress, "dominators: predecessors", uint64_t{m} * 2);
    for (uint32_t i = 0; i < m; ++i) {
      big_array::Check();
      swept.Tick(i);
      for (Index w : succ(vertex[i])) ++pred_begin[dfn[w] + 1];
    }
    // The super root's edges come on top of the references, which the
    // builder bounds to 2^32 - 1: the counts must still fit their 32 bits.
    uint64_t total = 0;
    for (uint32_t i = 0; i < m; ++i) total += pred_begin[i + 1];
    if (total > UINT32_MAX) throw std::runtime_error("more than 2^32-1 references and roots");
    for (uint32_t i = 0; i < m; ++i) pred_begin[i + 1] += pred_begin[i];
    pred.resize(pred_begin[m]);
    BigArray<uint32_t> fill(m);
    std::copy(pred_begin.begin(), pred_begin.end() - 1, fill.begin());
    for (uint32_t i = 0; i < m; ++i) {
      big_array::Check();
      swept.Tick(uint64_t{m} + i);
      for (Index w : succ(vertex[i])) pred[fill[dfn[w]]++] = i;
    }
  }
  // From here on only DFS numbers: dfn goes before the next arrays come.
  dfn.Free();

  // A vertex waits in one bucket at a time and gets its idom when it leaves
  // it, so idom[] holds the bucket's next link until then (4 bytes an object
  // less than a separate link array).
  BigArray<uint32_t> semi(m), label(m), idom(m, 0);
  // The forest of linked vertices. Vertices are linked in decreasing DFS
  // number, each to its DFS parent, so the ones at or above `linked` are in
  // the forest; an unlinked vertex's entry still holds its DFS parent, which
  // is what linking sets it to: one array serves for both (4 bytes an object
  // less). Path compression changes linked vertices' entries only.
  BigArray<uint32_t>& ancestor = parent;
  uint32_t linked = m;
  BigArray<uint32_t> bucket_head(m, kUnseen);
  for (uint32_t i = 0; i < m; ++i) semi[i] = label[i] = i;

  // eval with path compression, iterative: climb to the forest root first,
  // then compress top-down.
  BigArray<uint32_t> path;
  auto eval = [&](uint32_t v) -> uint32_t {
    if (v < linked) return v;
    path.clear();
    uint32_t x = v;
    while (ancestor[x] >= linked) {
      path.push_back(x);
      x = ancestor[x];
    }
    for (size_t k = path.size(); k-- > 0;) {
      const uint32_t y = path[k];
      const uint32_t a = ancestor[y];
      if (semi[label[a]] < semi[label[y]]) label[y] = label[a];
      ancestor[y] = ancestor[a];
    }
    return label[v];
  };

  ProgressTicker semidominated(progress, "dominators: semidominators", m - 1);
  for (uint32_t w = m - 1; w > 0; --w) {
    big_array::Check();
    semidominated.Tick(m - w);
    for (uint32_t e = pred_begin[w]; e < pred_begin[w + 1]; ++e) {
      const uint32_t u = eval(pred[e]);
      if (semi[u] < semi[w]) semi[w] = semi[u];
    }
    idom[w] = bucket_head[semi[w]];  // the bucket's next link
    bucket_head[semi[w]] = w;
    const uint32_t p = parent[w];
    linked = w;  // ancestor[w] is p already
    for (uint32_t v = bucket_head[p], next; v != kUnseen; v = next) {
      next = idom[v];
      const uint32_t u = eval(v);
      idom[v] = semi[u] < semi[v] ? u : p;
    }
    bucket_head[p] = kUnseen;
  }
  for (uint32_t w = 1; w < m; ++w) {
    if (idom[w] != semi[w]) idom[w] = idom[idom[w]];
  }
  pred.Free();
  pred_begin.Free();
  bucket_head.Free();
  parent.Free();
  label.Free();
  semi.Free();

  g.idom.assign(n, kNone);
  g.retained.resize(n);
  // Every object's own size, then the reached vertices' sweep.
  ProgressTicker summed(progress, "dominators: retained sizes", uint64_t{n} + m - 1);
  for (Index i = 0; i < n; ++i) {
    big_array::Check();
    summed.Tick(i);
    g.retained[i] = g.Size(i);
  }
  // Children after parents in DFS order, so sizes flow up in one sweep.
  for (uint32_t w = m - 1; w > 0; --w) {
    big_array::Check();
    summed.Tick(uint64_t{n} + m - w);
    const Index v = vertex[w];
    const uint32_t d = idom[w];
    if (d == 0) {
      g.idom[v] = kSuperRoot;
    } else {
      g.idom[v] = vertex[d];
      g.retained[vertex[d]] += g.retained[v];
    }
  }
  g.reachable_objects = m - 1;
  g.reachable_bytes = 0;
  for (uint32_t w = 1; w < m; ++w) g.reachable_bytes += g.Size(vertex[w]);
}

}  // namespace libdump::heapgraph
