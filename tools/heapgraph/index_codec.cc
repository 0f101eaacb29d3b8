#include "index_codec.h"

#include <algorithm>

namespace libdump::heapgraph::index {
namespace {

void PutPacked(Writer& w, const PackedU64& p) {
  w.Vec(p.base());
  w.Vec(p.low());
  w.Vec(p.wide());
}

bool GetPacked(Reader& r, PackedU64& p) {
  PackedU64::Parts parts;
  r.Vec(parts.base);
  r.Vec(parts.low);
  r.Vec(parts.wide);
  return r.ok() && p.Restore(std::move(parts));
}

// Each index array with its width (4 or 8 bytes an entry) in front.
void PutIndices(Writer& w, const IndexArray& a) {
  w.U64(a.entry_bytes());
  a.Visit([&](const auto& v) { w.Vec(v); });
}

bool GetIndices(Reader& r, IndexArray& a) {
  const uint64_t width = r.U64();
  if (width != 4 && width != 8) return false;
  a.Reset(width == 8);
  a.Visit([&](auto& v) { r.Vec(v); });
  return r.ok();
}

void PutStrings(Writer& w, const std::vector<std::string>& v) {
  w.U64(v.size());
  for (const std::string& s : v) w.Str(s);
}

void GetStrings(Reader& r, std::vector<std::string>& v) {
  v.resize(r.Count(8));
  for (std::string& s : v) s = r.Str();
}

// An unordered map as (key, value) pairs in key order, so the file is reproducible.
template <typename Map>
void PutMap(Writer& w, const Map& m) {
  std::vector<std::pair<uint64_t, uint64_t>> pairs(m.begin(), m.end());
  std::sort(pairs.begin(), pairs.end());
  std::vector<uint64_t> flat;
  flat.reserve(2 * pairs.size());
  for (const auto& [k, v] : pairs) flat.insert(flat.end(), {k, v});
  w.Vec(flat);
}

template <typename Map>
void GetMap(Reader& r, Map& m) {
  std::vector<uint64_t> flat;
  r.Vec(flat);
  for (size_t k = 0; k + 1 < flat.size(); k += 2) {
    m[static_cast<typename Map::key_type>(flat[k])] = static_cast<typename Map::mapped_type>(flat[k + 1]);
  }
}

}  // namespace

void PutGraph(Writer& w, const HeapGraph& g) {
  w.U64(static_cast<uint64_t>(g.source));
  w.Str(g.format);
  w.U64(g.id_size);
  w.U64(g.go);
  w.U64(g.classes.size());
  for (const ClassInfo& c : g.classes) {
    w.Str(c.name);
    for (uint64_t v : {c.id, uint64_t{c.super}, uint64_t{c.object}, uint64_t{c.instance_size}, uint64_t{c.platform},
                       uint64_t{c.weak}, uint64_t{c.array_type}, static_cast<uint64_t>(c.named_by), c.count, c.bytes,
                       c.retained}) {
      w.U64(v);
    }
    w.U64(c.fields.size());
    for (const FieldInfo& f : c.fields) {
      w.Str(f.name);
      for (uint64_t v : {uint64_t{f.offset}, uint64_t{f.size}, uint64_t{f.type}, uint64_t{f.is_ref}}) w.U64(v);
    }
    w.U64(c.statics.size());
    for (const StaticInfo& s : c.statics) {
      w.Str(s.name);
      w.U64(s.type);
      w.U64(s.value);
    }
  }
  PutStrings(w, g.root_kinds);
  w.U64(g.roots.size());
  for (const Root& r : g.roots) {
    for (uint64_t v : {uint64_t{r.object}, uint64_t{r.kind}, uint64_t{r.thread}, r.slot, r.ptr, r.frame_sp}) w.U64(v);
    w.Str(r.label);
    w.Str(r.variable);
    w.Str(r.module);
  }
  w.U64(g.threads.size());
  for (const ThreadInfo& t : g.threads) {
    w.Str(t.name);
    w.U64(t.id);
    w.U64(t.object);
    w.Str(t.state);
    PutStrings(w, t.frames);
  }
  w.Vec(g.finalizable);
  w.U64(g.dropped_roots);
  w.U64(g.dangling);
  w.U64(g.big_endian);
  w.U64(g.modules.size());
  for (const ModuleInfo& m : g.modules) {
    for (uint64_t v : {m.start, m.end, m.file_offset}) w.U64(v);
    w.Str(m.path);
    w.Str(m.build_id);
  }
  w.U64(g.frames.size());
  for (const FrameInfo& f : g.frames) {
    for (uint64_t v : {f.sp, f.parent, f.entry, f.pc, uint64_t{f.thread}}) w.U64(v);
    w.Str(f.name);
  }
  PutPacked(w, g.ids);
  w.Vec(g.cls);
  w.Vec(g.size32);
  PutMap(w, g.big_sizes);
  PutMap(w, g.elements);
  PutPacked(w, g.where);
  PutPacked(w, g.out_begin);
  PutIndices(w, g.out);
  w.Vec(g.weak_edges);
  PutIndices(w, g.by_id);
  w.U64(g.stacks.size());
  for (const auto& s : g.stacks) PutStrings(w, s);
  PutMap(w, g.stack_of);
  PutIndices(w, g.idom);
  w.Vec(g.retained);
  PutIndices(w, g.path_parent);
  PutIndices(w, g.top_retainers);
  w.U64(g.reachable_bytes);
  w.U64(g.total_bytes);
  w.U64(g.reachable_objects);
}

// Every index the graph's queries follow is in range: an index that passed
// its hash but was written by a tool with another idea of the graph must not
// send a query out of bounds.
namespace {

bool Consistent(const HeapGraph& g) {
  const uint64_t n = g.size();
  const uint64_t nc = g.classes.size();
  auto obj_or = [&](Index i, Index a, Index b) { return i < n || i == a || i == b; };
  if (g.where.size() != n || g.cls.size() != n || g.size32.size() != n || g.out_begin.size() != n + 1) return false;
  if (g.idom.size() != n || g.retained.size() != n || g.path_parent.size() != n) return false;
  if (!g.by_id.empty() && g.by_id.size() != n) return false;
  // 4-byte indices cannot name this many objects.
  if (WideFor(n) && !(g.out.wide() && g.by_id.wide() && g.idom.wide() && g.path_parent.wide() && g.top_retainers.wide())) return false;
  if (g.weak_edges.size() < (g.out.size() >> 6) + 1 && !g.out.empty()) return false;
  for (const ClassInfo& c : g.classes) {
    if (!(c.super < nc || c.super == kNone) || !obj_or(c.object, kNone, kNone)) return false;
  }
  for (const Root& r : g.roots) {
    if (!obj_or(r.object, kNone, kNone) || r.kind >= g.root_kinds.size()) return false;
    if (!(r.thread < g.threads.size() || r.thread == kNone)) return false;
  }
  for (const ThreadInfo& t : g.threads) {
    if (!obj_or(t.object, kNone, kNone)) return false;
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (g.cls[i] >= nc || g.out_begin[i] > g.out_begin[i + 1]) return false;
    if (!obj_or(g.idom[i], kNone, kSuperRoot) || !obj_or(g.path_parent[i], kNone, kSuperRoot)) return false;
    if (!g.by_id.empty() && g.by_id[i] >= n) return false;
    if (g.size32[i] == UINT32_MAX && !g.big_sizes.count(static_cast<Index>(i))) return false;
  }
  if (g.out_begin[n] != g.out.size()) return false;
  const bool out_ok = g.out.Visit([&](const auto& out) {
    for (auto t : out) {
      if (t >= n) return false;
    }
    return true;
  });
  if (!out_ok) return false;
  for (Index i : g.finalizable) {
    if (i >= n) return false;
  }
  for (Index i : g.top_retainers.span()) {
    if (i >= n) return false;
  }
  for (const auto& [i, s] : g.stack_of) {
    if (i >= n || s >= g.stacks.size()) return false;
  }
  for (const auto& [i, s] : g.big_sizes) {
    if (i >= n) return false;
  }
  for (const auto& [i, e] : g.elements) {
    if (i >= n) return false;
  }
  for (const FrameInfo& f : g.frames) {
    if (!(f.thread < g.threads.size() || f.thread == UINT32_MAX)) return false;
  }
  return true;
}

}  // namespace

bool GetGraph(Reader& r, HeapGraph& g) {
  g.source = static_cast<Source>(r.U64() & 1);
  g.format = r.Str();
  g.id_size = static_cast<uint32_t>(r.U64());
  g.go = r.U64() != 0;
  g.classes.resize(r.Count(8 * 12));
  for (ClassInfo& c : g.classes) {
    c.name = r.Str();
    c.id = r.U64();
    c.super = r.U64();
    c.object = r.U64();
    c.instance_size = static_cast<uint32_t>(r.U64());
    c.platform = r.U64() != 0;
    c.weak = r.U64() != 0;
    c.array_type = static_cast<uint8_t>(r.U64());
    c.named_by = static_cast<NamedBy>(std::min<uint64_t>(r.U64(), static_cast<uint64_t>(NamedBy::kSize)));
    c.count = r.U64();
    c.bytes = r.U64();
    c.retained = r.U64();
    c.fields.resize(r.Count(8 * 5));
    for (FieldInfo& f : c.fields) {
      f.name = r.Str();
      f.offset = static_cast<uint32_t>(r.U64());
      f.size = static_cast<uint32_t>(r.U64());
      f.type = static_cast<uint8_t>(r.U64());
      f.is_ref = r.U64() != 0;
    }
    c.statics.resize(r.Count(8 * 3));
    for (StaticInfo& s : c.statics) {
      s.name = r.Str();
      s.type = static_cast<uint8_t>(r.U64());
      s.value = r.U64();
    }
    if (!r.ok()) return false;
  }
  GetStrings(r, g.root_kinds);
  g.roots.resize(r.Count(8 * 9));
  for (Root& x : g.roots) {
    x.object = r.U64();
    x.kind = static_cast<uint32_t>(r.U64());
    x.thread = r.U64();
    x.slot = r.U64();
    x.ptr = r.U64();
    x.frame_sp = r.U64();
    x.label = r.Str();
    x.variable = r.Str();
    x.module = r.Str();
  }
  g.threads.resize(r.Count(8 * 5));
  for (ThreadInfo& t : g.threads) {
    t.name = r.Str();
    t.id = r.U64();
    t.object = r.U64();
    t.state = r.Str();
    GetStrings(r, t.frames);
  }
  r.Vec(g.finalizable);
  g.dropped_roots = r.U64();
  g.dangling = r.U64();
  g.big_endian = r.U64() != 0;
  g.modules.resize(r.Count(8 * 5));
  for (ModuleInfo& m : g.modules) {
    m.start = r.U64();
    m.end = r.U64();
    m.file_offset = r.U64();
    m.path = r.Str();
    m.build_id = r.Str();
  }
  g.frames.resize(r.Count(8 * 6));
  for (FrameInfo& f : g.frames) {
    f.sp = r.U64();
    f.parent = r.U64();
    f.entry = r.U64();
    f.pc = r.U64();
    f.thread = static_cast<uint32_t>(r.U64());
    f.name = r.Str();
  }
  if (!GetPacked(r, g.ids)) return false;
  r.Vec(g.cls);
  r.Vec(g.size32);
  GetMap(r, g.big_sizes);
  GetMap(r, g.elements);
  if (!GetPacked(r, g.where)) return false;
  if (!GetPacked(r, g.out_begin)) return false;
  if (!GetIndices(r, g.out)) return false;
  r.Vec(g.weak_edges);
  if (!GetIndices(r, g.by_id)) return false;
  g.stacks.resize(r.Count(8));
  for (auto& s : g.stacks) GetStrings(r, s);
  GetMap(r, g.stack_of);
  if (!GetIndices(r, g.idom)) return false;
  r.Vec(g.retained);
  if (!GetIndices(r, g.path_parent)) return false;
  if (!GetIndices(r, g.top_retainers)) return false;
  g.reachable_bytes = r.U64();
  g.total_bytes = r.U64();
  g.reachable_objects = r.U64();
  g.wide = g.out.wide();
  return r.ok() && Consistent(g);
}

}  // namespace libdump::heapgraph::index
