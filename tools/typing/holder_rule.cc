// Rules 4 and 5: what no stronger rule named is named by who holds it, then
// by its size (docs/TYPING.md).
//
// Holders: one breadth-first search over the references, seeded with every
// named object (in index order) and then every root's object, gives each
// unnamed object it reaches the first object (or root) that reached it. One
// forward scan of those holders' payloads finds the offset of the word that
// points at each child. A child's class is its holder's class and member,
// "(held by leveldb::DBImpl::mem_)" where the class's fields (DWARF) name the
// pointer at that offset, else the offset, "(held by leveldb::DBImpl +0x1a8)";
// what the child holds in turn, at any depth, joins one class per member,
// "(held by Foo::items_ +…)": one row per holder class and member, never one
// per offset chain.
//
// Memory: two 4-byte words per object (the holder, then the queue reused for
// the offsets), freed before the rule returns.
#include <algorithm>
#include <cstdio>
#include <map>

#include "typing.h"

namespace libdump::typing {
namespace {

constexpr uint32_t kNoOffset = UINT32_MAX;
constexpr uint32_t kNoHolder = UINT32_MAX;
constexpr uint32_t kRootBit = 0x80000000u;  // holder[i] = kRootBit | root index
constexpr size_t kMaxChain = 1;
constexpr uint32_t kElement = UINT32_MAX - 1;  // held by an element of an array-like holder
constexpr size_t kManyChildren = 8;

std::string Hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// What a root calls its holder in a class name: the variable when a rule
// named it, else its kind (one class per kind, not one per slot address).
std::string RootHolder(const HeapGraph& g, const heapgraph::Root& r) {
  const std::string kind = r.kind < g.root_kinds.size() ? g.root_kinds[r.kind] : "root";
  const std::string& l = r.label;
  if (r.kind == 1 && !r.variable.empty()) return "global `" + r.variable + "` (" + r.module + ")";
  if (r.kind == 1 && !r.module.empty()) return "global (" + r.module + ")";
  if (l.empty() || l.starts_with("slot 0x") || l.starts_with("frame sp ")) return kind;
  if (r.kind == 0) {
    // "FUNC sp+0x10": the frame's function.
    const size_t cut = std::min(l.find(" sp+"), l.find(" slot "));
    return "stack of " + l.substr(0, cut);
  }
  if (r.kind == 1) return "global " + l;
  return l;
}

class Holders {
 public:
  explicit Holders(Context& ctx) : ctx_(ctx), g_(ctx.graph()) {}

  void Run() {
    const Index n = static_cast<Index>(g_.size());
    if (n == 0) return;
    if (n >= kRootBit) return;  // indices would collide with root marks
    holder_.assign(n, kNoHolder);
    Search();
    FindOffsets();
    NameAll();
  }

 private:
  bool Unnamed(Index i) const { return ctx_.RuleOf(i) == Rule::kNothing; }

  void Search() {
    const Index n = static_cast<Index>(g_.size());
    heapgraph::BigArray<uint32_t>& queue = offset_;  // the queue's storage becomes the offsets'
    queue.clear();
    queue.reserve(n);
    // Each loop over the objects checks the budget itself (big_array.h): it
    // touches pages of file arrays without pushing anything.
    for (Index i = 0; i < n; ++i) {
      heapgraph::big_array::Check();
      if (!Unnamed(i)) queue.push_back(static_cast<uint32_t>(i));
    }
    // Roots by how lasting a holder they are: named globals, other globals,
    // other roots, then stack slots (a pointer a register spilled at the
    // moment of the dump must not name what a global holds).
    std::vector<uint32_t> order;
    for (uint32_t r = 0; r < g_.roots.size() && r < kRootBit; ++r) order.push_back(r);
    auto rank = [&](uint32_t r) {
      const heapgraph::Root& x = g_.roots[r];
      return x.kind == 1 ? (x.variable.empty() ? 1 : 0) : x.kind == 0 ? 4 : x.kind == 2 ? 2 : 3;
    };
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return rank(a) < rank(b); });
    for (uint32_t r : order) {
      const Index o = g_.roots[r].object;
      if (o < n && Unnamed(o) && holder_[o] == kNoHolder) {
        holder_[o] = kRootBit | r;
        queue.push_back(static_cast<uint32_t>(o));
      }
    }
    ctx_.SetStep("typing: holders, search");
    for (size_t head = 0; head < queue.size(); ++head) {
      heapgraph::big_array::Check();
      ctx_.Tick(head, n);
      const Index v = queue[head];
      for (Index w : g_.Out(v)) {
        if (w < n && w != v && Unnamed(w) && holder_[w] == kNoHolder) {
          holder_[w] = static_cast<uint32_t>(v);
          queue.push_back(static_cast<uint32_t>(w));
        }
      }
    }
  }

  void FindOffsets() {
    const Index n = static_cast<Index>(g_.size());
    offset_.assign(n, kNoOffset);
    heapgraph::BigArray<Index> parents;
    for (Index w = 0; w < n; ++w) {
      heapgraph::big_array::Check();
      if (holder_[w] != kNoHolder && !(holder_[w] & kRootBit)) parents.push_back(holder_[w]);
    }
    std::sort(parents.begin(), parents.end());
    parents.resize(static_cast<size_t>(std::unique(parents.begin(), parents.end()) - parents.begin()));
    const unsigned w = ctx_.ptr_size();
    std::vector<Index> kids;
    ctx_.SetStep("typing: holders, offsets");
    ctx_.Scan(std::span<const Index>(parents.data(), parents.size()), [&](Index p, std::span<const uint8_t> data) {
      // p's children, by address, for a binary search per word.
      kids.clear();
      for (Index c : g_.Out(p)) {
        if (c < n && holder_[c] == p && offset_[c] == kNoOffset) kids.push_back(c);
      }
      std::sort(kids.begin(), kids.end(), [&](Index a, Index b) { return g_.ids[a] < g_.ids[b]; });
      kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
      size_t left = kids.size();
      // Many children at as many offsets: an array's elements, one class.
      if (kids.size() > kManyChildren || g_.elements.count(p) || PointerArray(p, data)) {
        for (Index c : kids) offset_[c] = kElement;
        return;
      }
      for (size_t off = 0; off + w <= data.size() && left > 0; off += w) {
        const uint64_t v = ctx_.Word(data, off);
        if (v == 0) continue;
        auto it = std::upper_bound(kids.begin(), kids.end(), v, [&](uint64_t x, Index c) { return x < g_.ids[c]; });
        if (it == kids.begin()) continue;
        const Index c = *--it;
        if (v - g_.ids[c] >= std::max<uint64_t>(g_.Size(c), 1) || offset_[c] != kNoOffset) continue;
        offset_[c] = static_cast<uint32_t>(std::min<size_t>(off, kElement - 1));
        --left;
      }
    });
  }

  // An unnamed holder of at least kArrayWords words, each 0 or the start of
  // an object it references, two at least: an array of pointers (a hash
  // table's buckets), whose children are its elements whatever their number.
  static constexpr size_t kArrayWords = 8;
  bool PointerArray(Index p, std::span<const uint8_t> data) {
    const unsigned w = ctx_.ptr_size();
    if (!Unnamed(p) || data.size() < kArrayWords * w) return false;
    starts_.clear();
    for (Index c : g_.Out(p)) {
      if (c < g_.size()) starts_.push_back(g_.ids[c]);
    }
    std::sort(starts_.begin(), starts_.end());
    size_t pointers = 0;
    for (size_t off = 0; off + w <= data.size(); off += w) {
      const uint64_t v = ctx_.Word(data, off);
      if (v == 0) continue;
      if (!std::binary_search(starts_.begin(), starts_.end(), v)) return false;
      ++pointers;
    }
    return pointers >= 2;
  }

  struct Held {
    std::string base;              // the nearest class no holder named, or a root's holder name
    std::vector<uint32_t> chain;   // offsets from it (kNoOffset: unknown)
    bool open = false;             // "+…": deeper objects all join it
    bool member = false;           // base ends in a member's name: it counts as the chain's offset
  };

  static std::string Off(uint32_t o) { return o == kNoOffset ? "+?" : o == kElement ? "[]" : "+" + Hex(o); }

  uint32_t Make(Held h) {
    std::string name = "(held by " + h.base;
    for (uint32_t o : h.chain) name += " " + Off(o);
    if (h.open) name += " +\u2026";
    name += ")";
    const uint32_t c = ctx_.Class(name, Rule::kHolder);
    if (c >= held_of_.size()) held_of_.resize(c + 1, kNoHolder);
    if (held_of_[c] == kNoHolder && g_.classes[c].named_by == Rule::kHolder) {
      held_of_[c] = static_cast<uint32_t>(held_.size());
      held_.push_back(std::move(h));
    }
    return c;
  }

  // The pointer field of class c at offset `off` (its DWARF member's name), or "".
  static std::string MemberAt(const heapgraph::ClassInfo& c, uint32_t off) {
    if (off == kNoOffset || off == kElement) return "";
    for (const heapgraph::FieldInfo& f : c.fields) {
      if (f.offset == off && f.is_ref && !UnnamedField(f)) return f.name;
    }
    return "";
  }

  // The class of a child held at `off` by an object of class `holder`.
  uint32_t ChildClass(uint32_t holder, uint32_t off) {
    auto [it, added] = memo_.try_emplace({holder, off}, 0);
    if (!added) return it->second;
    const uint32_t hi = holder < held_of_.size() ? held_of_[holder] : kNoHolder;
    uint32_t c;
    if (hi == kNoHolder) {
      const std::string member = MemberAt(g_.classes[holder], off);
      c = member.empty() ? Make({g_.classes[holder].name, {off}, false}) : Make({g_.classes[holder].name + "::" + member, {}, false, true});
    } else {
      const Held& h = held_[hi];
      if (h.open || (!h.chain.empty() && h.chain.back() == off)) {
        c = holder;
      } else if (h.chain.size() + h.member >= kMaxChain) {
        c = Make({h.base, h.chain, true, h.member});
      } else {
        Held next{h.base, h.chain, false, h.member};
        next.chain.push_back(off);
        c = Make(std::move(next));
      }
    }
    memo_[{holder, off}] = c;
    return c;
  }

  void NameOne(Index w) {
    const uint32_t h = holder_[w];
    uint32_t c;
    if (h & kRootBit) {
      const heapgraph::Root& r = g_.roots[h & ~kRootBit];
      auto [it, added] = root_class_.try_emplace(RootHolder(g_, r), 0);
      if (added) it->second = Make({it->first, {}, false});
      c = it->second;
    } else {
      c = ChildClass(g_.cls[h], offset_[w]);
    }
    ctx_.Name(w, c, Rule::kHolder);
  }

  void NameAll() {
    // A holder is named before its children: walk up to a named ancestor,
    // then name down that chain (iteratively: a list may be deep).
    std::vector<Index> chain;
    const Index n = static_cast<Index>(g_.size());
    ctx_.SetStep("typing: holders, naming");
    for (Index w = 0; w < n; ++w) {
      heapgraph::big_array::Check();
      ctx_.Tick(w, n);
      if (holder_[w] == kNoHolder || !Unnamed(w)) continue;
      chain.clear();
      for (Index v = w; v != kNone && !(v & kRootBit) && Unnamed(v) && holder_[v] != kNoHolder;) {
        chain.push_back(v);
        const uint32_t h = holder_[v];
        v = (h & kRootBit) ? kNone : h;
        if (chain.size() > n) break;  // a cycle cannot happen in a BFS tree; bound it anyway
      }
      for (size_t k = chain.size(); k-- > 0;) NameOne(chain[k]);
    }
    holder_ = {};
    offset_ = {};
  }

  struct PairHash {
    size_t operator()(const std::pair<uint32_t, uint32_t>& p) const {
      return std::hash<uint64_t>()(uint64_t{p.first} << 32 | p.second);
    }
  };

  Context& ctx_;
  HeapGraph& g_;
  heapgraph::BigArray<uint32_t> holder_;  // per object: holder index, kRootBit|root, kNoHolder
  heapgraph::BigArray<uint32_t> offset_;  // per object: the queue, then the holding offset
  std::vector<Held> held_;
  std::vector<uint32_t> held_of_;  // class -> index in held_, kNoHolder
  std::unordered_map<std::pair<uint32_t, uint32_t>, uint32_t, PairHash> memo_;
  std::map<std::string, uint32_t> root_class_;
  std::vector<uint64_t> starts_;  // PointerArray's scratch
};

std::string SizeName(uint64_t size) {
  if (size <= 64 * 1024) return "(untyped " + std::to_string(size) + " B)";
  uint64_t lo = 64 * 1024;
  while (lo * 2 <= size && lo < (uint64_t{1} << 62)) lo *= 2;
  auto human = [](uint64_t v) {
    if (v >= (uint64_t{1} << 30)) return std::to_string(v >> 30) + " GiB";
    if (v >= (uint64_t{1} << 20)) return std::to_string(v >> 20) + " MiB";
    return std::to_string(v >> 10) + " KiB";
  };
  return "(untyped " + human(lo) + " to " + human(lo * 2) + ")";
}

}  // namespace

void ApplyHolderRule(Context& ctx) { Holders(ctx).Run(); }

void ApplySizeRule(Context& ctx) {
  HeapGraph& g = ctx.graph();
  std::unordered_map<uint64_t, uint32_t> by_size;
  for (Index i = 0; i < g.size(); ++i) {
    heapgraph::big_array::Check();
    ctx.Tick(i, g.size());
    if (ctx.RuleOf(i) != Rule::kNothing) continue;
    const uint64_t s = g.Size(i);
    auto [it, added] = by_size.try_emplace(s, 0);
    if (added) it->second = ctx.Class(SizeName(s), Rule::kSize);
    ctx.Name(i, it->second, Rule::kSize);
  }
}

}  // namespace libdump::typing
