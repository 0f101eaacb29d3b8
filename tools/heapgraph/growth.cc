#include "growth.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "dominator_tree.h"

namespace libdump::heapgraph {
namespace {

// Share of a point's growth that one surviving child must carry for the
// point to be passed down to it: most of it, not merely the largest part.
constexpr double kCarried = 0.8;

// Class names numbered across the whole series, so identity compares ints.
struct NameIds {
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::vector<uint32_t>> of;  // [dump][class index]

  explicit NameIds(const std::vector<const HeapGraph*>& series) {
    for (const HeapGraph* g : series) {
      std::vector<uint32_t> m(g->classes.size());
      for (size_t c = 0; c < m.size(); ++c) {
        m[c] = ids.try_emplace(g->classes[c].name, static_cast<uint32_t>(ids.size())).first->second;
      }
      of.push_back(std::move(m));
    }
  }
};

// Object i of dump a as found in dump b: same address, size and class.
Index Match(const std::vector<const HeapGraph*>& s, const NameIds& names, size_t a, Index i, size_t b) {
  const HeapGraph& ga = *s[a];
  const HeapGraph& gb = *s[b];
  const Index j = gb.Find(ga.ids[i]);
  if (j == kNone || gb.Size(j) != ga.Size(i) || names.of[b][gb.cls[j]] != names.of[a][ga.cls[i]]) return kNone;
  return j;
}

void ClassRows(const std::vector<const HeapGraph*>& s, Growth& gr) {
  const size_t n = s.size();
  std::map<std::string, SeriesClass> rows;
  for (size_t d = 0; d < n; ++d) {
    for (const ClassInfo& c : s[d]->classes) {
      SeriesClass& r = rows[c.name];
      if (r.count.empty()) {
        r.name = c.name;
        r.count.assign(n, 0);
        r.bytes.assign(n, 0);
        r.retained.assign(n, 0);
      }
      r.count[d] += c.count;
      r.bytes[d] += c.bytes;
      r.retained[d] += c.retained;
    }
  }
  for (auto& [name, r] : rows) {
    bool changed = false;
    r.grows = true;
    for (size_t d = 1; d < n; ++d) {
      changed |= r.count[d] != r.count[0] || r.bytes[d] != r.bytes[0] || r.retained[d] != r.retained[0];
      r.grows &= r.bytes[d] > r.bytes[d - 1];
    }
    if (changed) gr.classes.push_back(std::move(r));
  }
  std::stable_sort(gr.classes.begin(), gr.classes.end(), [](const SeriesClass& a, const SeriesClass& b) {
    if (a.grows != b.grows) return a.grows;
    return std::llabs(a.bytes_growth()) > std::llabs(b.bytes_growth());
  });
}

void Objects(const std::vector<const HeapGraph*>& s, const NameIds& names, size_t top, Growth& gr) {
  const size_t n = s.size();
  const HeapGraph& last = *s.back();
  for (size_t d = 0; d + 1 < n; ++d) {
    SeriesStep st;
    for (Index i = 0; i < s[d + 1]->size(); ++i) {
      if (Match(s, names, d + 1, i, d) == kNone) {
        ++st.new_objects;
        st.new_bytes += s[d + 1]->Size(i);
      }
    }
    for (Index i = 0; i < s[d]->size(); ++i) {
      if (Match(s, names, d, i, d + 1) == kNone) {
        ++st.freed_objects;
        st.freed_bytes += s[d]->Size(i);
      }
    }
    gr.steps.push_back(st);
  }

  // Survivors of the whole series, with their retained size in the first dump.
  std::vector<Index> first(last.size(), kNone);
  std::vector<int64_t> growth(last.size(), 0);
  for (Index i = 0; i < last.size(); ++i) {
    bool all = true;
    for (size_t d = 0; d + 1 < n && all; ++d) all = Match(s, names, n - 1, i, d) != kNone;
    if (!all) continue;
    ++gr.survived_objects;
    gr.survived_bytes += last.Size(i);
    first[i] = Match(s, names, n - 1, i, 0);
    if (last.idom[i] != kNone) {
      growth[i] = static_cast<int64_t>(last.retained[i]) - static_cast<int64_t>(s[0]->retained[first[i]]);
    }
  }

  // A point is a growing survivor none of whose surviving dominator-tree
  // children carries most of its growth.
  std::vector<int64_t> best_child(last.size(), 0);
  for (Index i = 0; i < last.size(); ++i) {
    const Index p = last.idom[i];
    if (first[i] != kNone && p != kNone && p != kSuperRoot) best_child[p] = std::max(best_child[p], growth[i]);
  }
  std::vector<Index> pts;
  for (Index i = 0; i < last.size(); ++i) {
    if (first[i] != kNone && growth[i] > 0 &&
        static_cast<double>(best_child[i]) < kCarried * static_cast<double>(growth[i])) {
      pts.push_back(i);
    }
  }
  std::stable_sort(pts.begin(), pts.end(), [&](Index a, Index b) { return growth[a] > growth[b]; });
  if (top && pts.size() > top) pts.resize(top);
  if (pts.empty()) return;

  // The newest dump's dominator-tree children, to walk what a point retains.
  last.idom.Visit([&](const auto& idom) {
    const auto tree = DominatorChildren(last, idom);
    for (Index p : pts) {
      AccumulationPoint ap;
      ap.object = p;
      ap.growth = growth[p];
      for (size_t d = 0; d < n; ++d) {
        const Index j = d + 1 == n ? p : Match(s, names, n - 1, p, d);
        ap.retained.push_back(s[d]->retained[j]);
      }
      std::map<std::string, GrowthPart> parts;
      std::vector<Index> stack{p};
      while (!stack.empty()) {
        const Index x = stack.back();
        stack.pop_back();
        if (Match(s, names, n - 1, x, 0) == kNone) {
          GrowthPart& part = parts[last.ClassName(x)];
          part.name = last.ClassName(x);
          ++part.count;
          part.bytes += last.Size(x);
        }
        for (uint64_t k = tree.begin[x]; k < tree.begin[x + 1]; ++k) stack.push_back(tree.child[k]);
      }
      for (auto& [name, part] : parts) ap.grown_by.push_back(part);
      std::stable_sort(ap.grown_by.begin(), ap.grown_by.end(),
                       [](const GrowthPart& a, const GrowthPart& b) { return a.bytes > b.bytes; });
      gr.points.push_back(std::move(ap));
    }
  });
}

}  // namespace

Growth AnalyzeGrowth(const std::vector<const HeapGraph*>& series, size_t top_points) {
  Growth gr;
  for (const HeapGraph* g : series) {
    gr.files.push_back(g->path);
    gr.objects.push_back(g->size());
    gr.bytes.push_back(g->total_bytes);
    gr.reachable_bytes.push_back(g->reachable_bytes);
  }
  if (series.size() < 2) return gr;
  ClassRows(series, gr);
  gr.by_object = std::all_of(series.begin(), series.end(), [](const HeapGraph* g) { return g->source == Source::kDump; });
  if (gr.by_object) Objects(series, NameIds(series), top_points, gr);
  return gr;
}

const SeriesClass* LargestGrowth(const Growth& gr) {
  const SeriesClass* best = nullptr;
  for (const SeriesClass& c : gr.classes) {
    if (c.bytes_growth() > 0 && (!best || c.bytes_growth() > best->bytes_growth())) best = &c;
  }
  return best;
}

}  // namespace libdump::heapgraph
