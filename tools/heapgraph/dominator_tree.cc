#include "dominator_tree.h"

#include <algorithm>

namespace libdump::heapgraph {

template <typename T>
DominatorTree<T> DominatorChildren(const HeapGraph& g, const BigArray<T>& idom, ProgressTicker* ticker) {
  constexpr T kNo = static_cast<T>(kNone), kSuper = static_cast<T>(kSuperRoot);
  const T n = static_cast<T>(g.size());
  DominatorTree<T> t;
  t.begin.assign(uint64_t{n} + 2, 0);
  for (T v = 0; v < n; ++v) {
    big_array::Check();
    if (ticker) ticker->Tick(v);
    const T d = idom[v];
    if (d == kNo) continue;
    ++t.begin[(d == kSuper ? n : d) + 1];
  }
  for (T i = 0; i <= n; ++i) {
    big_array::Check();
    t.begin[i + 1] += t.begin[i];
  }
  t.child.resize(t.begin[n + 1]);
  BigArray<T> fill(uint64_t{n} + 1);
  std::copy(t.begin.begin(), t.begin.end() - 1, fill.begin());
  for (T v = 0; v < n; ++v) {
    big_array::Check();
    if (ticker) ticker->Tick(uint64_t{n} + v);
    const T d = idom[v];
    if (d == kNo) continue;
    t.child[fill[d == kSuper ? n : d]++] = v;
  }
  return t;
}

template DominatorTree<uint32_t> DominatorChildren(const HeapGraph&, const BigArray<uint32_t>&, ProgressTicker*);
template DominatorTree<uint64_t> DominatorChildren(const HeapGraph&, const BigArray<uint64_t>&, ProgressTicker*);

}  // namespace libdump::heapgraph
