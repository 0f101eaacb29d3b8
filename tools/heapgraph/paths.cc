#include "paths.h"

#include <algorithm>
#include <type_traits>

namespace libdump::heapgraph {

namespace {

// T: the graph's index width (index_array.h).
template <typename T>
void Paths(HeapGraph& g, const BigArray<T>& out, BigArray<T>& parent, const Progress& progress) {
  constexpr T kNo = static_cast<T>(kNone);
  const size_t n = g.size();
  parent.assign(n, kNo);
  BigArray<T> queue;
  queue.reserve(n / 4);
  for (const Root& r : g.roots) {
    if (parent[r.object] == kNo) {
      parent[r.object] = static_cast<T>(kSuperRoot);
      queue.push_back(static_cast<T>(r.object));
    }
  }
  ProgressTicker visited(progress, "paths", n);
  for (size_t head = 0; head < queue.size(); ++head) {
    big_array::Check();
    visited.Tick(head);
    const T v = queue[head];
    for (uint64_t e = g.out_begin[v], end = g.out_begin[v + 1]; e < end; ++e) {
      const T w = out[e];
      if (parent[w] != kNo || g.WeakEdge(e)) continue;
      parent[w] = v;
      queue.push_back(w);
    }
  }
}

}  // namespace

void ComputePaths(HeapGraph& g, const Progress& progress) {
  g.path_parent.Reset(g.out.wide());
  g.out.Visit([&](const auto& out) {
    using T = std::remove_cvref_t<decltype(out[0])>;
    Paths<T>(g, out, g.path_parent.storage<T>(), progress);
  });
}

std::vector<Index> PathFromRoot(const HeapGraph& g, Index obj) {
  std::vector<Index> path;
  if (obj >= g.size() || g.path_parent[obj] == kNone) return path;
  for (Index v = obj; v != kSuperRoot; v = g.path_parent[v]) {
    path.push_back(v);
    if (path.size() > g.size()) break;  // cannot happen: BFS parents form a forest
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<uint32_t> RootsOf(const HeapGraph& g, Index obj) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < g.roots.size(); ++i) {
    if (g.roots[i].object == obj) out.push_back(i);
  }
  return out;
}

std::vector<Index> Referrers(const HeapGraph& g, Index obj, size_t skip, size_t limit, size_t* total) {
  std::vector<Index> out;
  size_t seen = 0;
  const size_t n = g.size();
  g.out.Visit([&](const auto& refs) {
    using T = std::remove_cvref_t<decltype(refs[0])>;
    const T o = static_cast<T>(obj);
    for (Index v = 0; v < n; ++v) {
      for (uint64_t e = g.out_begin[v], end = g.out_begin[v + 1]; e < end; ++e) {
        if (refs[e] != o) continue;
        if (seen >= skip && out.size() < limit) out.push_back(v);
        ++seen;
        break;  // one entry per referrer
      }
    }
  });
  if (total) *total = seen;
  return out;
}

std::vector<Index> ReachableFrom(const HeapGraph& g, Index obj, size_t limit, uint64_t* total_bytes, size_t* total) {
  std::vector<Index> out;
  BigArray<uint64_t> seen((g.size() + 63) / 64, 0);
  std::vector<Index> stack{obj};
  seen[obj >> 6] |= uint64_t{1} << (obj & 63);
  uint64_t bytes = 0;
  size_t count = 0;
  while (!stack.empty()) {
    const Index v = stack.back();
    stack.pop_back();
    ++count;
    bytes += g.Size(v);
    if (out.size() < limit) out.push_back(v);
    for (Index w : g.Out(v)) {
      if (seen[w >> 6] >> (w & 63) & 1) continue;
      seen[w >> 6] |= uint64_t{1} << (w & 63);
      stack.push_back(w);
    }
  }
  if (total_bytes) *total_bytes = bytes;
  if (total) *total = count;
  return out;
}

}  // namespace libdump::heapgraph
