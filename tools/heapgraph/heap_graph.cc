#include "heap_graph.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "libdump/format/format_error.h"
#include "parallel_sort.h"

namespace libdump::heapgraph {

const char* NamedByName(NamedBy n) {
  switch (n) {
    case NamedBy::kDump: return "dump";
    case NamedBy::kDwarf: return "dwarf";
    case NamedBy::kShape: return "shape";
    case NamedBy::kHolder: return "holder";
    case NamedBy::kSize: return "size";
    case NamedBy::kNothing: break;
  }
  return "untyped";
}

// The number of objects whose id is at most `id` (binary search in id order).
// Every reference of a file comes here once when it is loaded: most of the
// load's CPU.
//
// Ids in file order and packed (the usual case) are searched first among
// their blocks' first ids, 8 bytes each and contiguous, then among the one
// block's 32-bit distances: a search that stays in cache, where one over all
// the ids misses it at nearly every step. Among the blocks the halving
// branches (the next step's load starts before the comparison is known), in
// the block it is a conditional move: of the pairings tried this one
// measured fastest on the 10^7 bench dump.
static size_t PackedUpperBound(const HeapGraph& g, uint64_t id) {
  constexpr size_t kBlock = PackedU64::kBlock;
  const std::vector<uint64_t>& first = g.ids.base();
  const size_t block = static_cast<size_t>(std::upper_bound(first.begin(), first.end(), id) - first.begin());
  if (block == 0) return 0;
  const uint64_t d = id - first[block - 1];
  const uint32_t* const low = g.ids.low().data() + (block - 1) * kBlock;
  const uint32_t* l = low;  // low[0] is 0: at most d
  for (size_t len = std::min(kBlock, g.size() - (block - 1) * kBlock); len > 1;) {
    const size_t half = len / 2;
    l = l[half] <= d ? l + half : l;
    len -= half;
  }
  return (block - 1) * kBlock + static_cast<size_t>(l - low) + 1;
}

// Otherwise a plain binary search; `by(k)` is the k-th object in id order,
// one search per width of by_id.
template <typename By>
static size_t UpperBound(const HeapGraph& g, uint64_t id, By by) {
  size_t lo = 0, hi = g.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (g.ids[by(mid)] <= id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

static size_t UpperBound(const HeapGraph& g, uint64_t id) {
  if (g.by_id.empty()) {
    if (g.ids.packed() && g.size() > 0) return PackedUpperBound(g, id);
    return UpperBound(g, id, [](size_t k) { return k; });
  }
  return g.by_id.Visit([&](const auto& by_id) { return UpperBound(g, id, [&](size_t k) { return by_id[k]; }); });
}

Index HeapGraph::Find(uint64_t id) const {
  const size_t k = UpperBound(*this, id);
  if (k == 0) return kNone;
  const Index i = ById(k - 1);
  return ids[i] == id ? i : kNone;
}

Index FindContaining(const HeapGraph& g, uint64_t ptr) {
  // The last object starting at or below ptr.
  const size_t k = UpperBound(g, ptr);
  if (k == 0) return kNone;
  const Index i = g.ById(k - 1);
  return ptr - g.ids[i] < std::max<uint64_t>(g.Size(i), 1) ? i : kNone;
}

bool HeapGraph::IsSubclass(Index sub, Index base) const {
  // Bounded by the class count: a corrupt file may loop its superclasses.
  for (size_t steps = 0; sub != kNone && steps <= classes.size(); ++steps) {
    if (sub == base) return true;
    sub = classes[sub].super;
  }
  return false;
}

uint64_t HeapGraph::MemoryBytes() const {
  auto v = [](const auto& x) { return uint64_t{x.capacity()} * sizeof(x[0]); };
  auto ix = [](const IndexArray& x) { return uint64_t{x.capacity()} * x.entry_bytes(); };
  return ids.MemoryBytes() + v(cls) + v(size32) + where.MemoryBytes() + out_begin.MemoryBytes() + ix(out) +
         v(weak_edges) + ix(by_id) + ix(idom) + v(retained) + ix(path_parent) + ix(top_retainers);
}

// by_id: the object indices in increasing id, equal ids by index (so the
// order is one, however many threads sort). Sorting 10^7 ids in a random
// order takes 2 s of CPU. A template on the entries' type, for a by_id of
// either width.
template <typename T>
static void SortById(const HeapGraph& g, BigArray<T>& by_id) {
  const size_t n = g.ids.size();
  by_id.resize(n);
  for (size_t i = 0; i < n; ++i) by_id[i] = static_cast<T>(i);
  ParallelSort(by_id, [&](T a, T b) {
    const uint64_t x = g.ids[a], y = g.ids[b];
    return x != y ? x < y : a < b;
  });
}

Index GraphBuilder::AddObject(uint64_t id, uint32_t cls, uint64_t size, uint64_t where) {
  const Index i = g_.ids.size();
  g_.ids.push_back(id);
  g_.cls.push_back(cls);
  if (size >= UINT32_MAX) {
    g_.size32.push_back(UINT32_MAX);
    g_.big_sizes[i] = size;
  } else {
    g_.size32.push_back(static_cast<uint32_t>(size));
  }
  g_.where.push_back(where);
  g_.total_bytes += size;
  return i;
}

void GraphBuilder::FinishObjects() {
  const size_t n = g_.ids.size();
  g_.ids.shrink_to_fit();
  g_.cls.shrink_to_fit();
  g_.size32.shrink_to_fit();
  g_.where.shrink_to_fit();
  g_.wide = g_.wide || WideFor(n);
  g_.out.Reset(g_.wide);
  // Dumps and hprofs mostly list objects in id order already: then by_id
  // stays empty (an index an object saved).
  g_.by_id.Reset(g_.wide);
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) sorted = g_.ids[i - 1] <= g_.ids[i];
  if (!sorted) g_.by_id.Visit([&](auto& by_id) { SortById(g_, by_id); });
  for (size_t k = 1; k < n; ++k) {
    if (g_.ids[g_.ById(k)] == g_.ids[g_.ById(k - 1)]) {
      char b[32];
      snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(g_.ids[g_.ById(k)]));
      // Bad input, told like the readers' errors: where the second one is.
      const Index later = std::max(g_.ById(k), g_.ById(k - 1));
      throw format::FormatError(g_.where[later], "object", std::string("two objects have the id ") + b);
    }
  }
  g_.out_begin = PackedU64();
  g_.out_begin.reserve(n + 1);
  next_ = 0;
  begin_ = 0;
}

void GraphBuilder::BeginEdges(Index i) {
  // An object begun again (a batch split inside a huge array) keeps its
  // first reference as the start of its count.
  if (next_ > i) return;
  // Objects without references in between start (and end) here too.
  while (next_ <= i) {
    g_.out_begin.push_back(g_.out.size());
    ++next_;
  }
  begin_ = g_.out.size();
}

void GraphBuilder::Edge(Index to, bool weak) {
  const uint64_t e = g_.out.size();
  // The 4-byte algorithms count an object's references in 32 bits too.
  if (!g_.wide && e - begin_ >= UINT32_MAX) {
    g_.wide = true;
    g_.out.Widen();
    g_.by_id.Widen();
  }
  g_.out.push_back(to);
  if (weak) {
    if (g_.weak_edges.size() <= e >> 6) g_.weak_edges.resize((e >> 6) + 1, 0);
    g_.weak_edges[e >> 6] |= uint64_t{1} << (e & 63);
  }
}

void GraphBuilder::FinishEdges() {
  while (next_ <= g_.ids.size()) {
    g_.out_begin.push_back(g_.out.size());
    ++next_;
  }
  g_.out_begin.shrink_to_fit();
  g_.out.shrink_to_fit();
  g_.weak_edges.resize((g_.out.size() >> 6) + 1, 0);
}

}  // namespace libdump::heapgraph
