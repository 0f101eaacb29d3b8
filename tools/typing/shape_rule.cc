// Rule 3: libstdc++'s layouts on x86-64 (8-byte little-endian words), named
// only where the links prove them (docs/TYPING.md):
//   std::deque map/block  a map whose non-null words are one run of distinct
//                         pointers to the starts of blocks of one size (512 B
//                         for elements up to 512 B)
//   std::map node     _Rb_tree_node_base {color, parent, left, right}:
//                         color 0 or 1, each child's parent is the node, the
//                         parent (when a node) has it as a child, and at
//                         least one such link exists
//   std::unordered bucket array, node
//                         an array of words that are 0, pointers to node
//                         starts, and exactly one pointer elsewhere: to the
//                         container's _M_before_begin, whose _Hashtable
//                         words around it name this array (-16) and the
//                         first node (0), and, in a heap object, the bucket
//                         count (-8, within the array) and the node count
//                         (+8); nodes are what the buckets reach and one
//                         singly-linked chain (word 0) from the first node
//                         through all of them
//   std::list node        {next, prev}: next's prev and prev's next are the
//                         node, at least one of them a heap node
//   std::string buffer    a {pointer, length, capacity} triple in a heap
//                         object: pointer at an object's start, capacity >=
//                         16, length <= capacity, capacity + 1 <= its size,
//                         NUL at length
//   std::vector body      a {begin, end, capacity} triple in a heap object:
//                         begin at an object's start, begin <= end <= cap <=
//                         begin + its size, cap > begin
// Strings and vectors name their holder when it is named ("std::vector body
// (held by Ledger +0x0)"); nodes and bucket arrays the global whose root
// reaches them ("std::map node (global `g_accounts`)").
//
// Memory: four 4-byte words per object (the first words as object indices)
// and one byte of shape, freed before the rule returns.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <map>

#include "typing.h"

namespace libdump::typing {
namespace {

using heapgraph::FindContaining;

constexpr uint32_t kOther = UINT32_MAX;      // a word that is no object's start
constexpr uint32_t kZero = UINT32_MAX - 1;   // 0
constexpr uint32_t kColor = UINT32_MAX - 2;  // low half 0 or 1 (an rb node's color)
constexpr uint32_t kNoRoot = UINT32_MAX;     // root_of: held by no global
constexpr uint32_t kManyBodies = 8;          // a holder of more strings and vectors is an array

enum Kind : uint8_t {
  kNoShape, kString, kVector, kRbNode, kListNode, kHashNode, kBuckets, kDequeMap, kDequeBlock,
  kPending,  // a hash node while its bucket array is being proved
  kStringObject, kVectorObject, kMapObject,  // the container itself, allocated alone (new std::string)
};

const char* KindName(uint8_t k) {
  switch (k) {
    case kString: return "std::string buffer";
    case kVector: return "std::vector body";
    case kRbNode: return "std::map node";
    case kListNode: return "std::list node";
    case kHashNode: return "std::unordered_map node";
    case kBuckets: return "std::unordered_map buckets";
    case kDequeMap: return "std::deque map";
    case kDequeBlock: return "std::deque block";
    case kStringObject: return "std::string";
    case kVectorObject: return "std::vector";
    case kMapObject: return "std::map";
  }
  return "";
}

// A word of the debug heap's poison (docs/ALLOCATOR.md: every byte of a free
// slot is 0xdf until it is written), whole or cut by a write's zeros.
bool Poison(uint64_t w) {
  bool any = false;
  for (int k = 0; k < 8; ++k, w >>= 8) {
    const uint8_t b = w & 0xff;
    if (b != 0 && b != 0xdf) return false;
    any |= b == 0xdf;
  }
  return any;
}

std::string Hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// A class name without the holder part: "Foo (held by Bar +0x8)" -> "Foo".
std::string Base(const std::string& name) {
  const size_t p = name.find(" (held by ");
  if (p != std::string::npos && p > 0) return name.substr(0, p);
  return name;
}

class Shapes {
 public:
  explicit Shapes(Context& ctx) : ctx_(ctx), g_(ctx.graph()) {}

  void Run() {
    if (g_.id_size != 8 || g_.big_endian || g_.size() == 0 || g_.size() >= kColor) return;
    n_ = static_cast<Index>(g_.size());
    lo_ = g_.ids[g_.ById(0)];
    const Index last = g_.ById(n_ - 1);
    hi_ = g_.ids[last] + g_.Size(last);
    // Only objects no stronger rule named, and those holding one, can be
    // or own a shape: when they are few (a dump DWARF named), only they are
    // read and kept (sparse); else every object (dense, no lookup).
    auto relevant = [&](Index i) {
      if (ctx_.RuleOf(i) == Rule::kNothing) return true;
      for (Index j : g_.Out(i)) {
        if (j < n_ && ctx_.RuleOf(j) == Rule::kNothing) return true;
      }
      return false;
    };
    // One pass marks them (a bit each, with the count before each 64).
    read_.assign(n_ / 64 + 1, 0);
    before_.assign(n_ / 64 + 1, 0);
    size_t count = 0;
    for (Index i = 0; i < n_; ++i) {
      heapgraph::big_array::Check();
      if ((i & 63) == 0) before_[i >> 6] = static_cast<uint32_t>(count);
      if (!relevant(i)) continue;
      read_[i >> 6] |= uint64_t{1} << (i & 63);
      ++count;
    }
    if (count * 2 < n_) {
      only_.reserve(count);
      for (size_t k = 0; k < read_.size(); ++k) {
        for (uint64_t bits = read_[k]; bits; bits &= bits - 1) {
          only_.push_back(static_cast<Index>(k * 64 + static_cast<unsigned>(std::countr_zero(bits))));
        }
      }
      words_.assign(only_.size() + 1, {kOther, kOther, kOther, kOther});  // the last: every other object's
      sparse_ = true;
    } else {
      read_.Free();
      before_.Free();
      words_.assign(n_, {kOther, kOther, kOther, kOther});
    }
    kind_.assign(n_, kNoShape);
    ReadWords();
    VerifyStrings();
    Deques();
    Trees();
    Headers();
    Hashes();
    Lists();
    Triples();
    words_.Free();
    read_.Free();
    before_.Free();
    NameAll();
  }

 private:
  bool Unnamed(Index i) const { return ctx_.RuleOf(i) == Rule::kNothing && kind_[i] == kNoShape; }

  // The first four words of object i, as object indices or kZero, kColor, kOther.
  const std::array<uint32_t, 4>& W(Index i) const {
    if (!sparse_) return words_[i];
    return words_[i < n_ && Read(i) ? Slot(i) : words_.size() - 1];
  }
  std::array<uint32_t, 4>& WordsOf(Index i) { return sparse_ ? words_[Slot(i)] : words_[i]; }
  // Sparse: whether object i was read, and its slot (its rank among those).
  bool Read(Index i) const { return read_[i >> 6] >> (i & 63) & 1; }
  uint32_t Slot(Index i) const {
    const uint64_t below = read_[i >> 6] & ((uint64_t{1} << (i & 63)) - 1);
    return before_[i >> 6] + static_cast<uint32_t>(std::popcount(below));
  }

  void ReadWords() {
    const Context::Visit visit = [&](Index i, std::span<const uint8_t> d) {
      std::array<uint32_t, 4>& mine = WordsOf(i);
      // Triples at every word of every object (the holder's side of strings
      // and vectors); the word census of bucket arrays and deque maps.
      const size_t nw = d.size() / 8;
      size_t others = 0, starts = 0, blocks = 0, first = nw, last = 0;
      uint64_t other = 0;  // the word that points to no object's start
      // The debug heap's poison in a slot's unwritten bytes (a bucket
      // array's slack past its buckets, a deque map's unused ends) is allowed
      // in bucket arrays and deque maps outside their pointers, so that the
      // shapes do not depend on the heap's mode or a slot's past.
      size_t junk = 0, junk_first = nw, pointer_last = 0;
      // An object the loader scanned word by word has one reference per word
      // that points into an object, in order: those answer without a search.
      const auto out = g_.Out(i);
      const bool scanned = ctx_.LoaderScanned(i);
      size_t e = 0;
      for (size_t k = 0; k < nw; ++k) {
        const uint64_t a = ctx_.Word(d, k * 8);
        if (a == 0) {
          if (k < 4) mine[k] = kZero;
          continue;
        }
        Index b = kNone;
        if (a >= lo_ && a < hi_) {
          if (!scanned) {
            b = g_.Find(a);
          } else if (e < out.size() && a - g_.ids[out[e]] < std::max<uint64_t>(g_.Size(out[e]), 1)) {
            b = a == g_.ids[out[e]] ? out[e] : kNone;
            ++e;
          }
        }
        if (k < 4) mine[k] = b != kNone ? b : (k == 0 && (a & 0xffffffff) <= 1) ? kColor : kOther;
        // A tree's root names its header as parent: the container, maybe an object of its own.
        if (k == 1 && b == kNone && a >= lo_ && a < hi_ && (mine[0] == kColor || mine[0] == kZero))
          headers_.push_back({i, a});
        if (b == kNone || b == i) {
          if (Poison(a)) {
            ++junk;
            junk_first = std::min(junk_first, k);
            continue;
          }
          ++others;
          other = a;
          pointer_last = k;
          continue;
        }
        ++starts;
        pointer_last = k;
        if (g_.Size(b) == 512) ++blocks;
        first = std::min(first, k);
        last = k;
        if (k + 2 >= nw) continue;
        const uint64_t size = g_.Size(b);
        const uint64_t x = ctx_.Word(d, k * 8 + 8), c = ctx_.Word(d, k * 8 + 16);
        if (x >= a && x <= c && c > a && c - a <= size) {
          vectors_.push_back({b, i, static_cast<uint32_t>(k * 8), 0});
        } else if (x <= c && c >= 16 && c + 1 <= size && x < size && x < UINT32_MAX) {
          strings_.push_back({b, i, static_cast<uint32_t>(k * 8), static_cast<uint32_t>(x)});
        }
      }
      const bool junk_after = junk == 0 || junk_first > pointer_last;
      if (others == 1 && starts > 0 && junk_after && d.size() >= 16)
        candidates_.push_back({i, other});
      // A std::string of its own (32 bytes) holding a short string: its
      // pointer aims at its own buffer at +16, NUL at the length.
      if (d.size() == 32 && ctx_.Word(d, 0) == g_.ids[i] + 16) {
        const uint64_t len = ctx_.Word(d, 8);
        if (len <= 15 && d[16 + len] == 0) sso_.push_back(i);
      }
      // (A map's run of block pointers is contiguous: its junk lies outside it.)
      if (others == 0 && starts > 0 && blocks == starts && last - first + 1 == starts && d.size() >= 64)
        pending_maps_.push_back(i);
    };
    if (sparse_) {
      ctx_.Scan({only_.data(), only_.size()}, visit);
    } else {
      ctx_.ScanAll(visit);
    }
    only_.Free();
    auto by_body = [](const Claim& p, const Claim& q) {
      return p.body != q.body ? p.body < q.body : p.holder != q.holder ? p.holder < q.holder : p.offset < q.offset;
    };
    std::sort(strings_.begin(), strings_.end(), by_body);
    std::sort(vectors_.begin(), vectors_.end(), by_body);
  }

  struct Claim {
    Index body, holder;
    uint32_t offset;
    uint32_t length;  // strings
  };

  void VerifyStrings() {
    std::vector<Index> bodies;
    for (const Claim& c : strings_) {
      if (bodies.empty() || bodies.back() != c.body) bodies.push_back(c.body);
    }
    std::vector<Claim> proved;
    size_t at = 0;
    ctx_.Scan(bodies, [&](Index b, std::span<const uint8_t> d) {
      while (at < strings_.size() && strings_[at].body < b) ++at;
      for (; at < strings_.size() && strings_[at].body == b; ++at) {
        const Claim& c = strings_[at];
        if (c.length < d.size() && d[c.length] == 0 && (proved.empty() || proved.back().body != b)) proved.push_back(c);
      }
    });
    strings_ = std::move(proved);
  }

  void Deques() {
    for (Index m : pending_maps_) {
      if (!Unnamed(m)) continue;
      std::vector<Index> blocks(g_.Out(m).begin(), g_.Out(m).end());
      std::sort(blocks.begin(), blocks.end());
      if (blocks.empty() || std::adjacent_find(blocks.begin(), blocks.end()) != blocks.end()) continue;  // distinct
      bool free = true;
      for (Index b : blocks) free &= b != m && Unnamed(b) && g_.Size(b) == 512;
      if (!free) continue;
      kind_[m] = kDequeMap;
      for (Index b : blocks) kind_[b] = kDequeBlock;
    }
    pending_maps_ = {};
  }

  // Red (0, and a zero padding word reads as kZero) or black.
  static bool Color(uint32_t w) { return w == kColor || w == kZero; }

  bool IsRb(Index i) const {
    const auto& w = W(i);
    if (g_.Size(i) < 40 || !Color(w[0])) return false;
    int links = 0;
    for (int k : {2, 3}) {
      const uint32_t c = w[k];
      if (c == kZero) continue;
      if (c >= kColor || c == i || W(c)[1] != i || !Color(W(c)[0])) return false;
      ++links;
    }
    const uint32_t p = w[1];
    if (p < kColor) {
      // A parent in the heap is a node holding this one as a child; else it
      // is the header, inside the container.
      if (!Color(W(p)[0]) || (W(p)[2] != i && W(p)[3] != i)) return false;
      ++links;
    } else if (p != kOther) {
      return false;
    }
    return links > 0;
  }

  void Trees() {
    for (Index i = 0; i < n_; ++i) {
      heapgraph::big_array::Check();
      if (Unnamed(i) && IsRb(i)) kind_[i] = kRbNode;
    }
  }

  // The words of a libstdc++ _Hashtable around its _M_before_begin (at P):
  // _M_buckets at P - 16, _M_bucket_count at P - 8, _M_before_begin._M_nxt
  // at P, _M_element_count at P + 8. A global's dump holds only its pointer
  // words (roots), so the two counts are known in a heap object only.
  struct HashHeader {
    uint64_t buckets = 0, bucket_count = 0, first = 0, elements = 0;
    bool counted = false;
  };
  std::unordered_map<uint64_t, HashHeader> HashHeaders(const std::vector<uint64_t>& at) {
    std::unordered_map<uint64_t, HashHeader> out;
    std::vector<std::pair<Index, uint64_t>> in_heap;  // (container, P)
    std::unordered_map<uint64_t, uint64_t> slots;     // root slot -> its pointer, for the rest
    for (uint64_t p : at) {
      const Index c = FindContaining(g_, p);
      if (c == kNone) {
        slots.emplace(p - 16, 0);
        slots.emplace(p, 0);
      } else if (p - g_.ids[c] >= 16 && p - g_.ids[c] + 16 <= g_.Size(c)) {
        in_heap.push_back({c, p});
      }
    }
    for (const heapgraph::Root& r : g_.roots) {
      if (auto it = slots.find(r.slot); it != slots.end() && r.slot != 0) it->second = r.ptr;
    }
    for (uint64_t p : at) {
      auto b = slots.find(p - 16), f = slots.find(p);
      if (b != slots.end() && f != slots.end()) out[p] = {b->second, 0, f->second, 0, false};
    }
    std::sort(in_heap.begin(), in_heap.end());
    std::vector<Index> holders;
    for (const auto& [c, p] : in_heap) {
      if (holders.empty() || holders.back() != c) holders.push_back(c);
    }
    size_t k = 0;
    ctx_.Scan(holders, [&](Index c, std::span<const uint8_t> d) {
      for (; k < in_heap.size() && in_heap[k].first == c; ++k) {
        const size_t off = in_heap[k].second - g_.ids[c];
        out[in_heap[k].second] = {ctx_.Word(d, off - 16), ctx_.Word(d, off - 8), ctx_.Word(d, off), ctx_.Word(d, off + 8),
                                  true};
      }
    });
    return out;
  }

  void Hashes() {
    // Bucket arrays: words 0, node starts (whose next word is 0 or a
    // start), and one word elsewhere (the census of ReadWords).
    std::vector<Index> arrays;
    std::unordered_map<Index, uint64_t> other_of;
    std::vector<uint64_t> befores;
    for (const auto& [b, other] : candidates_) {
      if (!Unnamed(b)) continue;
      const Index o = FindContaining(g_, other);
      bool ok = true;
      for (Index s : g_.Out(b)) {
        if (s == o) continue;
        ok &= s != b && g_.Size(s) >= 16 && (W(s)[0] == kZero || W(s)[0] < kColor);
      }
      if (ok) {
        arrays.push_back(b);
        other_of[b] = other;
        befores.push_back(other);
      }
    }
    candidates_ = {};
    const std::unordered_map<uint64_t, HashHeader> headers = HashHeaders(befores);
    for (Index b : arrays) {
      const auto h = headers.find(other_of[b]);
      if (h == headers.end() || h->second.buckets != g_.ids[b]) continue;  // not libstdc++'s container
      const HashHeader& hh = h->second;
      if (hh.counted && (hh.bucket_count == 0 || hh.bucket_count > g_.Size(b) / 8)) continue;
      const Index first = g_.Find(hh.first);
      if (first == kNone || g_.ids[first] != hh.first) continue;
      const Index before = FindContaining(g_, other_of[b]);
      // The nodes: what the buckets reach, then their next words. Nodes
      // found are marked kPending until the whole array proves (or not).
      std::vector<Index> nodes;
      bool ok = true;
      auto visit = [&](Index v) {
        if (kind_[v] == kPending || kind_[v] == kHashNode) return;  // seen, or shared with an array proved before
        if (!Unnamed(v) || v == b || v >= n_) {
          ok = false;
          return;
        }
        kind_[v] = kPending;
        nodes.push_back(v);
      };
      for (Index t : g_.Out(b)) {
        if (t != before && ok) visit(t);
      }
      for (size_t k = 0; k < nodes.size() && ok; ++k) {
        const uint32_t next = W(nodes[k])[0];
        if (next == kZero) continue;
        if (next >= kColor) {
          ok = false;
          break;
        }
        visit(next);
      }
      // One chain from the first node through every node, as many as the
      // container counts: the buckets only point into it.
      if (ok) {
        size_t chain = 0;
        uint32_t v = static_cast<uint32_t>(first);
        while (ok && v != kZero) {
          ok = v < kColor && kind_[v] == kPending && chain++ < nodes.size();
          if (ok) v = W(v)[0];
        }
        ok &= chain == nodes.size() && (!hh.counted || hh.elements == nodes.size());
      }
      for (Index v : nodes) kind_[v] = ok ? kHashNode : kNoShape;
      if (ok) kind_[b] = kBuckets;
    }
  }

  void Lists() {
    for (Index i = 0; i < n_; ++i) {
      heapgraph::big_array::Check();
      if (!Unnamed(i) || g_.Size(i) < 24) continue;
      const uint32_t next = W(i)[0], prev = W(i)[1];
      if (next == kZero || prev == kZero || next == kColor) continue;
      int links = 0;
      if (next < kColor) {
        if (W(next)[1] != i) continue;
        ++links;
      }
      if (prev < kColor) {
        if (W(prev)[0] != i) continue;
        ++links;
      }
      if (links > 0) kind_[i] = kListNode;
    }
  }

  void Headers() {
    for (const auto& [r, a] : headers_) {
      if (kind_[r] != kRbNode) continue;
      const Index h = FindContaining(g_, a);
      if (h != kNone && Unnamed(h) && g_.Size(h) == 48 && a - g_.ids[h] == 8) kind_[h] = kMapObject;
    }
    headers_ = {};
  }

  void Triples() {
    for (const Claim& c : strings_) {
      if (Unnamed(c.body)) {
        kind_[c.body] = kString;
        owners_.push_back(c);
      }
    }
    Index prev = kNone;
    for (const Claim& c : vectors_) {
      if (c.body == prev) continue;  // the first holder (lowest index, offset) of a body
      prev = c.body;
      if (Unnamed(c.body)) {
        kind_[c.body] = kVector;
        owners_.push_back(c);
      }
    }
    strings_ = {};
    vectors_ = {};
    // The string or vector object itself, allocated alone: its triple at 0.
    for (const Claim& c : owners_) {
      const uint64_t size = g_.Size(c.holder);
      if (c.offset != 0 || !Unnamed(c.holder)) continue;
      if (kind_[c.body] == kString && size == 32) kind_[c.holder] = kStringObject;
      if (kind_[c.body] == kVector && size >= 24 && size <= 32) kind_[c.holder] = kVectorObject;
    }
    for (Index i : sso_) {
      if (Unnamed(i)) kind_[i] = kStringObject;
    }
    sso_ = {};
    std::sort(owners_.begin(), owners_.end(), [](const Claim& p, const Claim& q) { return p.body < q.body; });
    // A vector that is a global: its triple is three data roots in a row.
    std::vector<const heapgraph::Root*> data;
    for (const heapgraph::Root& r : g_.roots) {
      if (r.kind == 1 && r.slot != 0) data.push_back(&r);
    }
    std::sort(data.begin(), data.end(), [](const heapgraph::Root* a, const heapgraph::Root* b) { return a->slot < b->slot; });
    for (size_t k = 0; k + 2 < data.size(); ++k) {
      const heapgraph::Root &a = *data[k], &e = *data[k + 1], &c = *data[k + 2];
      const Index b = a.object;
      if (e.slot != a.slot + 8 || c.slot != a.slot + 16 || b >= n_ || e.object != b || c.object != b) continue;
      const uint64_t start = g_.ids[b];
      if (a.ptr != start || e.ptr < start || e.ptr > c.ptr || c.ptr <= start || c.ptr - start > g_.Size(b)) continue;
      if (!Unnamed(b)) continue;
      kind_[b] = kVector;
      if (!a.variable.empty()) global_owner_[b] = "global `" + a.variable + "` (" + a.module + ")";
    }
  }

  // Nodes and bucket arrays a named global reaches, through objects of the
  // same structure: the global is their owner.
  void StructureOwners(heapgraph::BigArray<uint32_t>& root_of) {
    heapgraph::BigArray<Index> queue;
    for (uint32_t r = 0; r < g_.roots.size(); ++r) {
      const heapgraph::Root& root = g_.roots[r];
      if (root.kind != 1 || root.variable.empty()) continue;
      const Index o = root.object;
      if (o >= n_ || root_of[o] != kNoRoot) continue;
      const uint8_t k = kind_[o];
      if (k != kRbNode && k != kListNode && k != kHashNode && k != kBuckets && k != kDequeMap) continue;
      root_of[o] = r;
      queue.assign(1, o);
      for (size_t h = 0; h < queue.size(); ++h) {
        for (Index t : g_.Out(queue[h])) {
          const uint8_t kt = kind_[t];
          const bool same = kt == k || (k == kBuckets && kt == kHashNode) || (k == kHashNode && kt == kBuckets) ||
                            (k == kDequeMap && kt == kDequeBlock);
          if (same && root_of[t] == kNoRoot) {
            root_of[t] = r;
            queue.push_back(t);
          }
        }
      }
    }
  }

  void NameAll() {
    heapgraph::BigArray<uint32_t> root_of(n_, kNoRoot);
    StructureOwners(root_of);
    std::map<std::string, uint32_t> classes;
    auto cls = [&](const std::string& name) {
      auto [it, added] = classes.try_emplace(name, 0);
      if (added) it->second = ctx_.Class(name, Rule::kShape);
      return it->second;
    };
    // The name depends on (kind, what names the holder, offset or element,
    // owning root): memoized on those, so a string is built once per class.
    struct KeyHash {
      size_t operator()(const std::array<uint64_t, 3>& k) const {
        return std::hash<uint64_t>()(k[0] * 0x9e3779b97f4a7c15ULL ^ k[1] * 0xc2b2ae3d27d4eb4fULL ^ k[2]);
      }
    };
    std::unordered_map<std::array<uint64_t, 3>, uint32_t, KeyHash> memo;
    // A holder of more bodies than a struct has pointers is an array (a
    // swiss table's slots that DWARF named as one object): its bodies are
    // one class, not one per offset.
    // (A sorted list of the holders, 4 bytes a claim: a hash map of them
    // would be ten times that on a heap of strings.)
    std::vector<Index> holders;
    holders.reserve(owners_.size());
    for (const Claim& c : owners_) holders.push_back(c.holder);
    std::sort(holders.begin(), holders.end());
    auto bodies_held = [&](Index h) {
      const auto [lo, hi] = std::equal_range(holders.begin(), holders.end(), h);
      return static_cast<size_t>(hi - lo);
    };
    for (Index i = 0; i < n_; ++i) {
      heapgraph::big_array::Check();
      const uint8_t k = kind_[i];
      if (k == kNoShape) continue;
      auto o = std::lower_bound(owners_.begin(), owners_.end(), i, [](const Claim& c, Index v) { return c.body < v; });
      std::array<uint64_t, 3> key{k, 0, 0};
      Index h = kNone;
      uint32_t off = 0;
      bool array = false;
      auto go = global_owner_.end();
      if (o != owners_.end() && o->body == i) {
        h = o->holder;
        off = o->offset;
        // An element of an array-like holder: no offset (one class, not one per element).
        array = kind_[h] == kVector || kind_[h] == kDequeBlock || g_.elements.count(h) || bodies_held(h) > kManyBodies;
        key = {k, kind_[h] != kNoShape ? uint64_t{1} << 40 | kind_[h]
                  : ctx_.RuleOf(h) != Rule::kNothing ? uint64_t{2} << 40 | g_.cls[h] : 0,
               array ? uint64_t{1} << 40 : off};
      } else if (go = global_owner_.find(i); go != global_owner_.end()) {
        key = {k, uint64_t{3} << 40 | i, 0};
      } else if (root_of[i] != kNoRoot) {
        key = {k, uint64_t{4} << 40 | root_of[i], 0};
      }
      auto [it, added] = memo.try_emplace(key, 0);
      if (added) {
        std::string name = KindName(k);
        if (h != kNone) {
          std::string holder;
          if (kind_[h] != kNoShape) {
            holder = KindName(kind_[h]);
          } else if (ctx_.RuleOf(h) != Rule::kNothing) {
            holder = Base(g_.ClassName(h));
          }
          if (!holder.empty()) name += " (held by " + holder + (array ? " []" : " +" + Hex(off)) + ")";
        } else if (go != global_owner_.end()) {
          name += " (held by " + go->second + ")";
        } else if (root_of[i] != kNoRoot) {
          const heapgraph::Root& r = g_.roots[root_of[i]];
          name += " (held by global `" + r.variable + "` (" + r.module + "))";
        }
        it->second = cls(name);
      }
      ctx_.Name(i, it->second, Rule::kShape);
    }
  }

  Context& ctx_;
  HeapGraph& g_;
  Index n_ = 0;
  uint64_t lo_ = 0, hi_ = 0;
  heapgraph::BigArray<std::array<uint32_t, 4>> words_;  // by object (dense) or by slot (sparse)
  bool sparse_ = false;
  // Sparse: a bit per object read, and per 64 objects how many were read
  // before them, so an object's slot is a rank (a hash map of millions of
  // objects would be some hundred MB outside the budget).
  heapgraph::BigArray<uint64_t> read_;
  heapgraph::BigArray<uint32_t> before_;
  heapgraph::BigArray<Index> only_;  // sparse: the objects read, ascending
  heapgraph::BigArray<uint8_t> kind_;
  std::vector<Claim> strings_, vectors_;
  std::vector<Index> pending_maps_;
  std::vector<std::pair<Index, uint64_t>> candidates_;  // bucket arrays: (array, its one word that is no node start)
  std::vector<Claim> owners_;  // strings' and vectors' holders, by body
  std::vector<std::pair<Index, uint64_t>> headers_;  // (node, the parent word pointing inside an object)
  std::vector<Index> sso_;  // 32-byte objects holding a short std::string
  std::unordered_map<Index, std::string> global_owner_;
};

}  // namespace

void ApplyShapeRule(Context& ctx) { Shapes(ctx).Run(); }

}  // namespace libdump::typing
