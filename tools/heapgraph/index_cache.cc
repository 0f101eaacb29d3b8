#include "index_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "analyze.h"

namespace libdump::heapgraph {
namespace {

constexpr char kMagic[8] = {'L', 'D', 'I', 'N', 'D', 'E', 'X', '2'};
constexpr size_t kEdge = 64 << 10;  // bytes of the dump's head and tail hashed into the tag

// A 4-lane multiply-rotate hash: fast enough to check gigabytes of index at
// memory speed, which a byte-wise FNV is not.
class Hash {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    for (; n >= 32; p += 32, n -= 32) {
      for (int k = 0; k < 4; ++k) {
        uint64_t w;
        std::memcpy(&w, p + 8 * k, 8);
        lane_[k] = Round(lane_[k], w);
      }
    }
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      lane_[0] = Round(lane_[0], w);
    }
    for (; n; --n) lane_[1] = Round(lane_[1], *p++);
  }
  uint64_t Value() const {
    uint64_t h = total_ * 0x9E3779B97F4A7C15ull;
    for (uint64_t l : lane_) h = Round(h, l);
    return h ^ (h >> 31);
  }

 private:
  static uint64_t Round(uint64_t h, uint64_t w) {
    h ^= w * 0xC2B2AE3D27D4EB4Full;
    h = (h << 31 | h >> 33) * 0x9E3779B97F4A7C15ull;
    return h;
  }
  uint64_t lane_[4] = {1, 2, 3, 4};
  uint64_t total_ = 0;
};

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

bool PreadAll(int fd, void* buf, size_t n, uint64_t off) {
  auto* p = static_cast<char*>(buf);
  while (n) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return true;
}

// What the index was built from.
struct Tag {
  uint64_t size = 0, mtime_s = 0, mtime_ns = 0, ino = 0, dev = 0, head = 0, tail = 0;
  std::string salt;
  std::string tool;
  bool operator==(const Tag&) const = default;
};

std::string ToolIdentity() {
  struct stat st;
  if (::stat("/proc/self/exe", &st) != 0) return "?";
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

bool TagOf(const std::string& dump, const std::string& salt, Tag* t, std::string* why) {
  Fd f(::open(dump.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
    *why = std::string("cannot read the dump: ") + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return false;
  }
  t->size = static_cast<uint64_t>(st.st_size);
  t->mtime_s = static_cast<uint64_t>(st.st_mtim.tv_sec);
  t->mtime_ns = static_cast<uint64_t>(st.st_mtim.tv_nsec);
  t->ino = st.st_ino;
  t->dev = st.st_dev;
  std::string buf(std::min<uint64_t>(kEdge, t->size), '\0');
  Hash h, tl;
  if (!PreadAll(f.fd, buf.data(), buf.size(), 0)) return *why = "cannot read the dump's head", false;
  h.Add(buf.data(), buf.size());
  if (!PreadAll(f.fd, buf.data(), buf.size(), t->size - buf.size())) return *why = "cannot read the dump's tail", false;
  tl.Add(buf.data(), buf.size());
  t->head = h.Value();
  t->tail = tl.Value();
  t->salt = salt;
  t->tool = ToolIdentity();
  return true;
}

// Buffered sequential writes, hashed as written.
class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) { buf_.reserve(kBuf); }
  void Bytes(const void* p, size_t n) {
    hash_.Add(p, n);
    Raw(p, n);
  }
  void U64(uint64_t v) { Bytes(&v, sizeof v); }
  void Str(const std::string& s) {
    U64(s.size());
    Bytes(s.data(), s.size());
  }
  template <typename T>
  void Vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    U64(v.size());
    Bytes(v.data(), v.size() * sizeof(T));
  }
  // The hash of everything so far, then flush; false on a write error.
  bool Finish() {
    const uint64_t h = hash_.Value();
    Raw(&h, sizeof h);
    return Flush() && ok_;
  }
  int error() const { return err_; }

 private:
  static constexpr size_t kBuf = 1 << 20;
  void Raw(const void* p, size_t n) {
    const auto* c = static_cast<const char*>(p);
    if (buf_.size() + n > kBuf) {
      Flush();
      if (n >= kBuf) {  // large arrays go straight to the file
        WriteAll(c, n);
        return;
      }
    }
    buf_.insert(buf_.end(), c, c + n);
  }
  bool Flush() {
    WriteAll(buf_.data(), buf_.size());
    buf_.clear();
    return ok_;
  }
  void WriteAll(const char* p, size_t n) {
    while (ok_ && n) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ok_ = false;
        err_ = w < 0 ? errno : ENOSPC;
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  int fd_;
  std::vector<char> buf_;
  Hash hash_;
  bool ok_ = true;
  int err_ = 0;
};

// Sequential reads, every length checked against what the file still holds
// before anything is allocated, hashed as read.
class Reader {
 public:
  Reader(int fd, uint64_t size) : fd_(fd), left_(size) {}
  bool Bytes(void* p, size_t n) {
    if (!ok_ || n > left_) return ok_ = false;
    if (!PreadAll(fd_, p, n, off_)) return ok_ = false;
    off_ += n;
    left_ -= n;
    hash_.Add(p, n);
    return true;
  }
  uint64_t U64() {
    uint64_t v = 0;
    Bytes(&v, sizeof v);
    return v;
  }
  std::string Str() {
    const uint64_t n = U64();
    if (n > left_) {
      ok_ = false;
      return {};
    }
    std::string s(n, '\0');
    Bytes(s.data(), n);
    return s;
  }
  template <typename T>
  void Vec(std::vector<T>& v) {
    const uint64_t n = U64();
    if (!ok_ || n > left_ / sizeof(T)) {
      ok_ = false;
      return;
    }
    v.resize(n);
    Bytes(v.data(), n * sizeof(T));
  }
  // A count of items each at least `min_bytes` long in the file.
  uint64_t Count(size_t min_bytes) {
    const uint64_t n = U64();
    if (n > left_ / std::max<size_t>(min_bytes, 1)) ok_ = false;
    return ok_ ? n : 0;
  }
  // The stored hash matches what was read, and nothing follows it.
  bool Finish() {
    const uint64_t want = hash_.Value();
    uint64_t got = 0;
    if (!ok_ || left_ != sizeof got || !PreadAll(fd_, &got, sizeof got, off_)) return false;
    return got == want;
  }
  bool ok() const { return ok_; }

 private:
  int fd_;
  uint64_t off_ = 0, left_;
  Hash hash_;
  bool ok_ = true;
};

void PutTag(Writer& w, const Tag& t) {
  w.Bytes(kMagic, sizeof kMagic);
  for (uint64_t v : {t.size, t.mtime_s, t.mtime_ns, t.ino, t.dev, t.head, t.tail}) w.U64(v);
  w.Str(t.salt);
  w.Str(t.tool);
}

bool GetTag(Reader& r, Tag* t) {
  char magic[sizeof kMagic];
  if (!r.Bytes(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) return false;
  for (uint64_t* v : {&t->size, &t->mtime_s, &t->mtime_ns, &t->ino, &t->dev, &t->head, &t->tail}) *v = r.U64();
  t->salt = r.Str();
  t->tool = r.Str();
  return r.ok();
}

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
  w.Vec(g.out_begin);
  w.Vec(g.out);
  w.Vec(g.weak_edges);
  w.Vec(g.by_id);
  w.U64(g.stacks.size());
  for (const auto& s : g.stacks) PutStrings(w, s);
  PutMap(w, g.stack_of);
  w.Vec(g.idom);
  w.Vec(g.retained);
  w.Vec(g.path_parent);
  w.Vec(g.top_retainers);
  w.U64(g.reachable_bytes);
  w.U64(g.total_bytes);
  w.U64(g.reachable_objects);
}

// Every index the graph's queries follow is in range: an index that passed
// its hash but was written by a tool with another idea of the graph must not
// send a query out of bounds.
bool Consistent(const HeapGraph& g) {
  const uint64_t n = g.size();
  const uint64_t nc = g.classes.size();
  auto obj_or = [&](Index i, Index a, Index b) { return i < n || i == a || i == b; };
  if (g.where.size() != n || g.cls.size() != n || g.size32.size() != n || g.out_begin.size() != n + 1) return false;
  if (g.idom.size() != n || g.retained.size() != n || g.path_parent.size() != n) return false;
  if (!g.by_id.empty() && g.by_id.size() != n) return false;
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
  for (Index t : g.out) {
    if (t >= n) return false;
  }
  for (Index i : g.finalizable) {
    if (i >= n) return false;
  }
  for (Index i : g.top_retainers) {
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

bool GetGraph(Reader& r, HeapGraph& g) {
  g.source = static_cast<Source>(r.U64() & 1);
  g.format = r.Str();
  g.id_size = static_cast<uint32_t>(r.U64());
  g.go = r.U64() != 0;
  g.classes.resize(r.Count(8 * 12));
  for (ClassInfo& c : g.classes) {
    c.name = r.Str();
    c.id = r.U64();
    c.super = static_cast<Index>(r.U64());
    c.object = static_cast<Index>(r.U64());
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
    x.object = static_cast<Index>(r.U64());
    x.kind = static_cast<uint32_t>(r.U64());
    x.thread = static_cast<uint32_t>(r.U64());
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
    t.object = static_cast<Index>(r.U64());
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
  r.Vec(g.out_begin);
  r.Vec(g.out);
  r.Vec(g.weak_edges);
  r.Vec(g.by_id);
  g.stacks.resize(r.Count(8));
  for (auto& s : g.stacks) GetStrings(r, s);
  GetMap(r, g.stack_of);
  r.Vec(g.idom);
  r.Vec(g.retained);
  r.Vec(g.path_parent);
  r.Vec(g.top_retainers);
  g.reachable_bytes = r.U64();
  g.total_bytes = r.U64();
  g.reachable_objects = r.U64();
  return r.ok() && Consistent(g);
}

std::string CacheDir(const IndexOptions& o) {
  if (!o.dir.empty()) return o.dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/libdump";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/libdump";
  return {};
}

// mkdir -p, owner only.
bool MakeDirs(const std::string& dir, std::string* why) {
  for (size_t k = 1; k <= dir.size(); ++k) {
    if (k != dir.size() && dir[k] != '/') continue;
    const std::string part = dir.substr(0, k);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = part + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *why = dir + ": not a directory";
    return false;
  }
  return true;
}

}  // namespace

std::string IndexPathFor(const std::string& dump, const IndexOptions& o, std::string* why) {
  const std::string dir = CacheDir(o);
  if (dir.empty()) {
    *why = "no cache directory (set XDG_CACHE_HOME or HOME, or give --index-dir)";
    return {};
  }
  if (!MakeDirs(dir, why)) return {};
  char real[PATH_MAX];
  const std::string abs = ::realpath(dump.c_str(), real) ? real : dump;
  Hash h;
  h.Add(abs.data(), abs.size());
  h.Add(o.salt.data(), o.salt.size());
  char hex[20];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h.Value()));
  std::string base = abs.substr(abs.rfind('/') + 1);
  if (base.size() > 64) base.resize(64);
  return dir + "/" + base + "-" + hex + ".ldindex";
}

bool LoadIndex(const std::string& index, const std::string& dump, const std::string& salt, HeapGraph& g,
               std::string* why) {
  Fd f(::open(index.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  if (f.fd < 0) {
    *why = errno == ENOENT ? "no index yet" : std::string("cannot open the index: ") + std::strerror(errno);
    return false;
  }
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return *why = "the index is not a regular file", false;
  Tag want, got;
  if (!TagOf(dump, salt, &want, why)) return false;
  Reader r(f.fd, static_cast<uint64_t>(st.st_size));
  if (!GetTag(r, &got)) return *why = "not an index file", false;
  if (!(got == want)) {
    *why = got.tool != want.tool ? "built by another build of the tool"
           : got.salt != want.salt ? "built with other options"
                                   : "the dump changed since it was indexed";
    return false;
  }
  HeapGraph loaded;
  if (!GetGraph(r, loaded) || !r.Finish()) return *why = "the index is truncated or damaged", false;
  loaded.path = dump;
  g = std::move(loaded);
  return true;
}

namespace {

bool SaveTagged(const std::string& index, const Tag& t, const HeapGraph& g, std::string* why) {
  const std::string dir = index.substr(0, index.rfind('/') + 1);
  // Unnamed until complete: a process killed while writing leaves nothing.
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  std::string named;
  if (fd < 0) {  // a file system without O_TMPFILE: a named temporary, removed on failure
    named = index + ".tmp." + std::to_string(::getpid());
    fd = ::open(named.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return *why = index + ": " + std::strerror(errno), false;
  }
  Fd f(fd);
  Writer w(fd);
  PutTag(w, t);
  PutGraph(w, g);
  auto fail = [&](int err) {
    if (!named.empty()) ::unlink(named.c_str());
    *why = index + ": " + std::strerror(err);
    return false;
  };
  if (!w.Finish()) return fail(w.error());
  if (named.empty()) {
    // linkat gives the unnamed file a temporary name, rename puts it in place
    // over any older index in one step.
    named = index + ".tmp." + std::to_string(::getpid());
    ::unlink(named.c_str());
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) != 0) return fail(errno);
  }
  if (::rename(named.c_str(), index.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace

bool SaveIndex(const std::string& index, const std::string& dump, const std::string& salt, const HeapGraph& g,
               std::string* why) {
  Tag t;
  return TagOf(dump, salt, &t, why) && SaveTagged(index, t, g, why);
}

IndexReport OpenIndexed(const std::string& path, HeapGraph& g, const Progress& progress, const IndexOptions& o,
                        const Opener& opener) {
  const Opener open = opener ? opener : [&](HeapGraph& h) { Open(path, h, progress); };
  IndexReport rep;
  struct stat st;
  const bool cacheable = o.enabled && path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                         (!o.dir.empty() || static_cast<uint64_t>(st.st_size) >= o.min_size);
  if (cacheable) rep.index = IndexPathFor(path, o, &rep.note);
  if (rep.index.empty()) {
    open(g);
    return rep;
  }
  if (progress) progress("reading the index", 0);
  if (LoadIndex(rep.index, path, o.salt, g, &rep.note)) {
    rep.use = IndexUse::kLoaded;
    rep.note.clear();
    return rep;
  }
  // Tagged as the dump was before it was read: one that changes while it is
  // read gets no index.
  Tag before, after;
  std::string why;
  const bool tagged = TagOf(path, o.salt, &before, &why);
  open(g);
  if (progress) progress("writing the index", 0);
  if (tagged && (!TagOf(path, o.salt, &after, &why) || !(after == before))) {
    if (why.empty()) why = "the dump changed while it was read";
  }
  if (tagged && why.empty() && SaveTagged(rep.index, before, g, &why)) {
    rep.use = IndexUse::kSaved;
  } else {
    rep.use = IndexUse::kUnsaved;
    rep.note = why;
  }
  return rep;
}

}  // namespace libdump::heapgraph
