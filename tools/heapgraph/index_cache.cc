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

#include "analyze.h"
#include "big_array.h"
#include "index_codec.h"

namespace libdump::heapgraph {
namespace {

using index::Hash;
using index::PreadAll;
using index::Reader;
using index::Writer;

// The format's version is its last character: an index of another layout is
// not an index to this reader, and is rebuilt (the layout: index_codec.h).
constexpr char kMagic[8] = {'L', 'D', 'I', 'N', 'D', 'E', 'X', '5'};
constexpr size_t kEdge = 64 << 10;  // bytes of the dump's head and tail hashed into the tag

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

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

void PutTag(Writer& w, const Tag& t) {
  for (uint64_t v : {t.size, t.mtime_s, t.mtime_ns, t.ino, t.dev, t.head, t.tail}) w.U64(v);
  w.Str(t.salt);
  w.Str(t.tool);
}

bool GetTag(Reader& r, Tag* t) {
  for (uint64_t* v : {&t->size, &t->mtime_s, &t->mtime_ns, &t->ino, &t->dev, &t->head, &t->tail}) *v = r.U64();
  t->salt = r.Str();
  t->tool = r.Str();
  return r.ok();
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

bool ConfigureMemory(const std::string& memory, const IndexOptions& o, std::string* why) {
  uint64_t budget = DefaultMemoryBudget();
  if (memory == "unlimited") {
    budget = 0;
  } else if (!memory.empty() && !ParseMemorySize(memory, &budget)) {
    *why = "--memory takes a size of 1M or more (512M, 2G, 1.5G) or 'unlimited', not '" + memory + "'";
    return false;
  }
  std::string dir = CacheDir(o), ignored;
  if (!dir.empty() && !MakeDirs(dir, &ignored)) dir.clear();
  SetMemoryBudget(budget, dir);
  return true;
}

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
  Reader r;
  switch (r.Open(f.fd, static_cast<uint64_t>(st.st_size), kMagic)) {
    case Reader::Status::kOk: break;
    case Reader::Status::kNotIndex: return *why = "not an index file", false;
    case Reader::Status::kOtherVersion: return *why = "an index of another format version", false;
    case Reader::Status::kDamaged: return *why = "the index is truncated or damaged", false;
  }
  if (!GetTag(r, &got)) return *why = "the index is truncated or damaged", false;
  if (!(got == want)) {
    *why = got.tool != want.tool ? "built by another build of the tool"
           : got.salt != want.salt ? "built with other options"
                                   : "the dump changed since it was indexed";
    return false;
  }
  HeapGraph loaded;
  if (!index::GetGraph(r, loaded)) return *why = "the index is truncated or damaged", false;
  loaded.path = dump;
  g = std::move(loaded);
  return true;
}

namespace {

bool SaveTagged(const std::string& index, const Tag& t, const HeapGraph& g, std::string* why,
                const Progress& progress = {}) {
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
  Writer w;
  if (progress) {
    w.OnWrite([&](uint64_t done, uint64_t total) { progress("writing the index", done, total, ProgressUnit::kBytes); });
  }
  PutTag(w, t);
  index::PutGraph(w, g);
  auto fail = [&](int err) {
    if (!named.empty()) ::unlink(named.c_str());
    *why = index + ": " + std::strerror(err);
    return false;
  };
  if (int err = 0; !w.Finish(fd, kMagic, &err)) return fail(err);
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
  // `note` says why an index that is there was not used; a first open has none.
  if (::access(rep.index.c_str(), F_OK) == 0) {
    if (progress) progress("reading the index", 0);
    if (LoadIndex(rep.index, path, o.salt, g, &rep.note)) {
      rep.use = IndexUse::kLoaded;
      rep.note.clear();
      return rep;
    }
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
  if (tagged && why.empty() && SaveTagged(rep.index, before, g, &why, progress)) {
    rep.use = IndexUse::kSaved;
  } else {
    rep.use = IndexUse::kUnsaved;
    rep.note = why;
  }
  return rep;
}

}  // namespace libdump::heapgraph
