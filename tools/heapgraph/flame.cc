#include "flame.h"

#include <algorithm>
#include <unordered_map>

#include "dominator_tree.h"

namespace libdump::heapgraph {
namespace {

constexpr uint32_t kNoClass = UINT32_MAX;

class FlameBuilder {
 public:
  FlameBuilder(const HeapGraph& g, const FlameLimits& limits) : g_(g), limits_(limits) {
    t_.frames.push_back({"all reachable", 0, 0, 0, 0, kNone, {}});
    cls_.push_back(kNoClass);
  }

  // The frame of a top retainer's root kind: the kind of the root naming it,
  // or "several roots" when it is no root itself (only the roots together
  // dominate it).
  uint32_t RootFrame(const std::string& kind) {
    auto [it, fresh] = root_frames_.try_emplace(kind, 0);
    if (fresh) it->second = New(kind, 0, kNoClass);
    return it->second;
  }

  // The frame object w (of class c) enters under frame `parent`.
  uint32_t Enter(uint32_t parent, Index w) {
    const uint32_t c = g_.cls[w];
    if (cls_[parent] == c || t_.frames[parent].depth >= limits_.max_depth) return parent;
    auto it = class_frames_.find(uint64_t{parent} << 32 | c);
    uint32_t f;
    if (it != class_frames_.end()) {
      f = it->second;
    } else if (t_.frames.size() >= limits_.max_frames) {
      return parent;
    } else {
      f = New(g_.classes[c].name, parent, c);
      class_frames_.emplace(uint64_t{parent} << 32 | c, f);
    }
    Add(f, w);
    return f;
  }

  void Add(uint32_t f, Index w) {
    FlameFrame& fr = t_.frames[f];
    fr.bytes += g_.retained[w];
    ++fr.objects;
    if (fr.largest == kNone || g_.retained[w] > g_.retained[fr.largest]) fr.largest = w;
  }

  FlameTree Finish() {
    for (uint32_t f = 1; f < t_.frames.size(); ++f) t_.frames[t_.frames[f].parent].children.push_back(f);
    for (FlameFrame& fr : t_.frames) {
      std::sort(fr.children.begin(), fr.children.end(), [&](uint32_t a, uint32_t b) {
        const FlameFrame &x = t_.frames[a], &y = t_.frames[b];
        return x.bytes != y.bytes ? x.bytes > y.bytes : x.name < y.name;
      });
    }
    return std::move(t_);
  }

 private:
  uint32_t New(const std::string& name, uint32_t parent, uint32_t c) {
    t_.frames.push_back({name, parent, t_.frames[parent].depth + 1, 0, 0, kNone, {}});
    cls_.push_back(c);
    return static_cast<uint32_t>(t_.frames.size() - 1);
  }

  const HeapGraph& g_;
  const FlameLimits limits_;
  FlameTree t_;
  std::vector<uint32_t> cls_;  // per frame: its class, kNoClass for roots and frame 0
  std::unordered_map<std::string, uint32_t> root_frames_;
  std::unordered_map<uint64_t, uint32_t> class_frames_;  // parent << 32 | class
};

template <typename T>
FlameTree Build(const HeapGraph& g, const BigArray<T>& idom, const FlameLimits& limits) {
  const T n = static_cast<T>(g.size());
  const DominatorTree<T> tree = DominatorChildren(g, idom);
  std::unordered_map<Index, uint32_t> kind_of;  // top retainers that are roots
  for (const Root& r : g.roots) {
    if (r.object != kNone && g.idom[r.object] == kSuperRoot) kind_of.try_emplace(r.object, r.kind);
  }
  FlameBuilder b(g, limits);
  struct Step {
    T v, k;  // node, next child
    uint32_t frame;
  };
  std::vector<Step> stack;
  for (T k = tree.begin[n]; k < tree.begin[n + 1]; ++k) {
    const T w = tree.child[k];
    const auto it = kind_of.find(w);
    const uint32_t rf = b.RootFrame(it == kind_of.end() ? "several roots" : g.root_kinds[it->second]);
    b.Add(0, w);
    b.Add(rf, w);
    stack.push_back({w, tree.begin[w], b.Enter(rf, w)});
    while (!stack.empty()) {
      big_array::Check();
      Step& s = stack.back();
      if (s.k == tree.begin[s.v + 1]) {
        stack.pop_back();
        continue;
      }
      const T c = tree.child[s.k++];
      const uint32_t f = b.Enter(s.frame, c);
      stack.push_back({c, tree.begin[c], f});
    }
  }
  return b.Finish();
}

void Fold(std::ostream& out, const FlameTree& t, uint32_t f, const std::string& prefix) {
  const std::string stack = prefix.empty() ? FoldedName(t.frames[f].name) : prefix + ';' + FoldedName(t.frames[f].name);
  if (const uint64_t s = t.self(f)) out << stack << ' ' << s << '\n';
  for (uint32_t c : t.frames[f].children) Fold(out, t, c, stack);
}

}  // namespace

uint64_t FlameTree::self(uint32_t f) const {
  uint64_t s = frames[f].bytes;
  for (uint32_t c : frames[f].children) s -= frames[c].bytes;
  return s;
}

FlameTree BuildFlame(const HeapGraph& g, const FlameLimits& limits) {
  return g.idom.Visit([&](const auto& idom) { return Build(g, idom, limits); });
}

std::string FoldedName(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return s;
}

void WriteFolded(std::ostream& out, const FlameTree& t) {
  for (uint32_t c : t.frames[0].children) Fold(out, t, c, "");
}

}  // namespace libdump::heapgraph
