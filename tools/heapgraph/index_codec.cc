#include "index_codec.h"

#include <fcntl.h>

#include <algorithm>

namespace libdump::heapgraph::index {
namespace {

constexpr size_t kEntryBytes = 4 * sizeof(uint64_t);

bool PwriteAll(int fd, const void* buf, size_t n, uint64_t off, int* err) {
  const auto* p = static_cast<const char*>(buf);
  while (n) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *err = w < 0 ? errno : ENOSPC;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return true;
}

// The head's bytes: magic, array count and meta size, the table, the meta,
// the hash.
uint64_t HeadBytes(uint64_t arrays, uint64_t meta) {
  return 3 * sizeof(uint64_t) + arrays * kEntryBytes + meta + sizeof(uint64_t);
}

}  // namespace

bool Writer::Finish(int fd, const char (&magic)[8], int* err) {
  const uint64_t head = HeadBytes(arrays_.size(), meta_.size());
  std::vector<ArrayEntry> table;
  uint64_t end = head;
  uint64_t total = head, written = 0;
  for (const Pending& a : arrays_) total += a.count * a.element_size;
  for (const Pending& a : arrays_) {
    ArrayEntry e{a.element_size, a.count, AlignUp(end), 0};
    // An array in a file may be paged out: read back (and counted against
    // the budget) a chunk at a time, like any pass over it.
    const auto* p = static_cast<const char*>(a.data);
    Hash h;
    for (uint64_t done = 0, bytes = a.count * a.element_size; done < bytes; done += kChunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - done));
      h.Add(p + done, n);
      if (!PwriteAll(fd, p + done, n, e.offset + done, err)) return false;
      big_array::CheckNow();
      written += n;
      if (on_write_) on_write_(written, total);
    }
    e.hash = h.Value();
    end = e.offset + a.count * a.element_size;
    table.push_back(e);
  }
  // The gaps are holes, read as zeros; the file ends where the last array
  // does (past the head when there is none).
  if (::ftruncate(fd, static_cast<off_t>(end)) != 0) {
    *err = errno;
    return false;
  }
  std::string h(magic, sizeof magic);
  auto u64 = [&](uint64_t v) { h.append(reinterpret_cast<const char*>(&v), sizeof v); };
  u64(arrays_.size());
  u64(meta_.size());
  for (const ArrayEntry& e : table) {
    for (uint64_t v : {e.element_size, e.count, e.offset, e.hash}) u64(v);
  }
  h += meta_;
  Hash hash;
  hash.Add(h.data(), h.size());
  u64(hash.Value());
  if (!PwriteAll(fd, h.data(), h.size(), 0, err)) return false;
  if (on_write_) on_write_(total, total);
  return true;
}

Reader::Status Reader::Open(int fd, uint64_t size, const char (&magic)[8]) {
  fd_ = fd;
  uint64_t fixed[3];
  if (size < sizeof fixed || !PreadAll(fd, fixed, sizeof fixed, 0)) return Status::kNotIndex;
  if (std::memcmp(fixed, magic, sizeof magic - 1) != 0) return Status::kNotIndex;
  if (std::memcmp(fixed, magic, sizeof magic) != 0) return Status::kOtherVersion;
  const uint64_t arrays = fixed[1], meta = fixed[2];
  if (arrays > kMaxArrays || meta > size) return Status::kDamaged;
  const uint64_t head = HeadBytes(arrays, meta);
  if (head > size) return Status::kDamaged;
  // The table first (at most kMaxArrays entries): the arrays tile the rest
  // of the file in order, each at the first aligned offset after the one
  // before, with zeros between. A damaged meta size fails here, before a
  // head of that size is read into memory.
  table_.resize(arrays);
  if (!PreadAll(fd, table_.data(), arrays * kEntryBytes, sizeof fixed)) return Status::kDamaged;
  uint64_t end = head;
  std::vector<char> gap, zeros(kAlign);
  for (const ArrayEntry& e : table_) {
    if (e.element_size == 0 || e.element_size > 8 || e.offset != AlignUp(end) || e.offset > size ||
        e.count > (size - e.offset) / e.element_size) {
      return Status::kDamaged;
    }
    gap.resize(e.offset - end);
    if (!PreadAll(fd, gap.data(), gap.size(), end) || std::memcmp(gap.data(), zeros.data(), gap.size()) != 0) {
      return Status::kDamaged;
    }
    end = e.offset + e.count * e.element_size;
  }
  if (end != size) return Status::kDamaged;
  head_.resize(head);
  if (!PreadAll(fd, head_.data(), head, 0)) return Status::kDamaged;
  Hash h;
  h.Add(head_.data(), head - sizeof(uint64_t));
  uint64_t want;
  std::memcpy(&want, head_.data() + head - sizeof want, sizeof want);
  if (h.Value() != want) return Status::kDamaged;
  at_ = head_.data() + sizeof fixed + arrays * kEntryBytes;
  left_ = meta;
  return Status::kOk;
}

namespace {

void PutPacked(Writer& w, const PackedU64& p) {
  w.Vec(p.base());
  w.Array(p.low());
  w.Array(p.wide());
}

bool GetPacked(Reader& r, PackedU64& p) {
  PackedU64::Parts parts;
  r.Vec(parts.base);
  r.Array(parts.low);
  r.Array(parts.wide);
  return r.ok() && p.Restore(std::move(parts));
}

// Each index array with its width (4 or 8 bytes an entry) in front.
void PutIndices(Writer& w, const IndexArray& a) {
  w.U64(a.entry_bytes());
  a.Visit([&](const auto& v) { w.Array(v); });
}

bool GetIndices(Reader& r, IndexArray& a) {
  const uint64_t width = r.U64();
  if (width != 4 && width != 8) return false;
  a.Reset(width == 8);
  a.Visit([&](auto& v) { r.Array(v); });
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
                       uint64_t{c.weak}, uint64_t{c.own}, uint64_t{c.array_type}, static_cast<uint64_t>(c.named_by), c.count, c.bytes,
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
  w.U64(g.include_own);
  w.U64(g.own_objects);
  w.U64(g.own_bytes);
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
  w.Array(g.cls);
  w.Array(g.size32);
  PutMap(w, g.big_sizes);
  PutMap(w, g.elements);
  PutPacked(w, g.where);
  PutPacked(w, g.out_begin);
  PutIndices(w, g.out);
  w.Array(g.weak_edges);
  PutIndices(w, g.by_id);
  w.U64(g.stacks.size());
  for (const auto& s : g.stacks) PutStrings(w, s);
  PutMap(w, g.stack_of);
  PutIndices(w, g.idom);
  w.Array(g.retained);
  PutIndices(w, g.path_parent);
  PutIndices(w, g.top_retainers);
  w.U64(g.reachable_bytes);
  w.U64(g.total_bytes);
  w.U64(g.reachable_objects);
}

// Every index the graph's queries follow is in range: an index that passed
// its hashes but was written by a tool with another idea of the graph must
// not send a query out of bounds. The large arrays are checked as they are
// hashed, a chunk at a time, in loops of a fixed trip count the compiler
// turns into vector code: the checks run at the speed of the hash.
namespace {

constexpr size_t kBlock = 64;

// The largest of p[0..m), plus `bias` (wrapping), so that kNone and
// kSuperRoot (bias 2) come out as 1 and 0.
// T: 4- or 8-byte entries (index_array.h), the marks at the top of either.
template <typename T>
T MaxPlus(const T* p, size_t m, T bias) {
  T lanes[kBlock] = {};
  size_t j = 0;
  for (; j + kBlock <= m; j += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) lanes[k] = std::max(lanes[k], static_cast<T>(p[j + k] + bias));
  }
  T top = 0;
  for (; j < m; ++j) top = std::max(top, static_cast<T>(p[j] + bias));
  for (T v : lanes) top = std::max(top, v);
  return top;
}

// Each i0 + k with p[k] == UINT32_MAX is a key of `big`: a size that does
// not fit 32 bits is there. Rare: looked up only in a block that has one.
bool BigSizesKnown(const uint32_t* p, size_t m, size_t i0, const std::unordered_map<Index, uint64_t>& big) {
  auto known = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) {
      if (p[k] == UINT32_MAX && !big.count(static_cast<Index>(i0 + k))) return false;
    }
    return true;
  };
  size_t j = 0;
  for (; j + kBlock <= m; j += kBlock) {
    uint32_t any = 0;
    for (size_t k = 0; k < kBlock; ++k) any |= p[j + k] == UINT32_MAX;
    if (any && !known(j, j + kBlock)) return false;
  }
  return known(j, m);
}

// All of p[0..m) below n.
template <typename T>
bool Below(const T* p, size_t m, uint64_t n) { return m == 0 || MaxPlus<T>(p, m, 0) < n; }
// All of p[0..m) below n, or kNone, or kSuperRoot.
template <typename T>
bool BelowOrMark(const T* p, size_t m, uint64_t n) { return m == 0 || uint64_t{MaxPlus<T>(p, m, 2)} < n + 2; }

// One index array of either width, each entry below n (or a mark).
bool VerifyIndices(Reader& r, const IndexArray& a, uint64_t n, bool marks) {
  return a.Visit([&](const auto& v) {
    return r.Verify(v, [&](const auto* p, size_t m, size_t) { return marks ? BelowOrMark(p, m, n) : Below(p, m, n); });
  });
}

bool Consistent(Reader& r, const HeapGraph& g) {
  const uint64_t n = g.size();
  const uint64_t nc = g.classes.size();
  auto obj_or = [&](Index i, Index a, Index b) { return i < n || i == a || i == b; };
  if (g.where.size() != n || g.cls.size() != n || g.size32.size() != n || g.out_begin.size() != n + 1) return false;
  if (g.idom.size() != n || g.retained.size() != n || g.path_parent.size() != n) return false;
  if (!g.by_id.empty() && g.by_id.size() != n) return false;
  // One width for every index array (the algorithms dispatch on the
  // references' width and read the others at it), and 4-byte indices cannot
  // name this many objects.
  const bool w = g.out.wide();
  if (g.by_id.wide() != w || g.idom.wide() != w || g.path_parent.wide() != w || g.top_retainers.wide() != w) return false;
  if (WideFor(n) && !w) return false;
  if (g.weak_edges.size() < (g.out.size() >> 6) + 1 && !g.out.empty()) return false;
  for (const ClassInfo& c : g.classes) {
    if (!(c.super < nc || c.super == kNone) || !obj_or(c.object, kNone, kNone)) return false;
  }
  for (const Root& x : g.roots) {
    if (!obj_or(x.object, kNone, kNone) || x.kind >= g.root_kinds.size()) return false;
    if (!(x.thread < g.threads.size() || x.thread == kNone)) return false;
  }
  for (const ThreadInfo& t : g.threads) {
    if (!obj_or(t.object, kNone, kNone)) return false;
  }
  for (Index i : g.finalizable) {
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
  // The large arrays, in the order they were written. The references'
  // offsets never decrease, across chunks too (packed: a block's first
  // value plus each entry's distance from it).
  uint64_t last_begin = 0;
  const auto& begin_base = g.out_begin.base();
  const bool arrays =
      r.Verify(g.ids.low()) && r.Verify(g.ids.wide()) &&
      r.Verify(g.cls, [&](const uint32_t* p, size_t m, size_t) { return Below(p, m, nc); }) &&
      r.Verify(g.size32,
               [&](const uint32_t* p, size_t m, size_t i0) { return BigSizesKnown(p, m, i0, g.big_sizes); }) &&
      r.Verify(g.where.low()) && r.Verify(g.where.wide()) &&
      r.Verify(g.out_begin.low(),
               [&](const uint32_t* p, size_t m, size_t i0) {
                 bool bad = false;
                 for (size_t k = 0; k < m; ++k) {
                   const uint64_t v = begin_base[(i0 + k) / PackedU64::kBlock] + p[k];
                   bad |= v < last_begin;
                   last_begin = v;
                 }
                 return !bad;
               }) &&
      r.Verify(g.out_begin.wide(),
               [&](const uint64_t* p, size_t m, size_t) {
                 bool bad = false;
                 for (size_t k = 0; k < m; ++k) {
                   bad |= p[k] < last_begin;
                   last_begin = p[k];
                 }
                 return !bad;
               }) &&
      g.out_begin[n] == g.out.size() && VerifyIndices(r, g.out, n, false) && r.Verify(g.weak_edges) &&
      VerifyIndices(r, g.by_id, n, false) && VerifyIndices(r, g.idom, n, true) && r.Verify(g.retained) &&
      VerifyIndices(r, g.path_parent, n, true) && VerifyIndices(r, g.top_retainers, n, false);
  return arrays && r.Finish();
}

}  // namespace

bool GetGraph(Reader& r, HeapGraph& g) {
  g.source = static_cast<Source>(r.U64() & 1);
  g.format = r.Str();
  g.id_size = static_cast<uint32_t>(r.U64());
  g.go = r.U64() != 0;
  g.classes.resize(r.Count(8 * 13));
  for (ClassInfo& c : g.classes) {
    c.name = r.Str();
    c.id = r.U64();
    c.super = r.U64();
    c.object = r.U64();
    c.instance_size = static_cast<uint32_t>(r.U64());
    c.platform = r.U64() != 0;
    c.weak = r.U64() != 0;
    c.own = r.U64() != 0;
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
  g.include_own = r.U64() != 0;
  g.own_objects = r.U64();
  g.own_bytes = r.U64();
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
  r.Array(g.cls);
  r.Array(g.size32);
  GetMap(r, g.big_sizes);
  GetMap(r, g.elements);
  if (!GetPacked(r, g.where)) return false;
  if (!GetPacked(r, g.out_begin)) return false;
  if (!GetIndices(r, g.out)) return false;
  r.Array(g.weak_edges);
  if (!GetIndices(r, g.by_id)) return false;
  g.stacks.resize(r.Count(8));
  for (auto& s : g.stacks) GetStrings(r, s);
  GetMap(r, g.stack_of);
  if (!GetIndices(r, g.idom)) return false;
  r.Array(g.retained);
  if (!GetIndices(r, g.path_parent)) return false;
  if (!GetIndices(r, g.top_retainers)) return false;
  g.reachable_bytes = r.U64();
  g.total_bytes = r.U64();
  g.reachable_objects = r.U64();
  g.wide = g.out.wide();
  return r.ok() && Consistent(r, g);
}

}  // namespace libdump::heapgraph::index
