// hprof files into a HeapGraph. Object sizes follow VisualVM's heap library
// (the reader the project's interop checks use), so retained sizes agree with
// it: an instance is its class's instance size (the CLASS DUMP field; when the
// class is dumped after the instance, its field bytes plus a header of two
// ids), an array its elements plus a header of two ids and a 4-byte length,
// rounded up to 8 bytes. Class objects are nodes (their statics are
// references) of size 0.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "edge_batch.h"
#include "libdump/format/hprof_reader.h"
#include "load.h"

namespace libdump::heapgraph {
namespace {

using format::hprof::HprofClass;
using format::hprof::HprofRoot;

const char* PrimName(uint8_t t) {
  switch (t) {
    case 4: return "boolean[]";
    case 5: return "char[]";
    case 6: return "float[]";
    case 7: return "double[]";
    case 8: return "byte[]";
    case 9: return "short[]";
    case 10: return "int[]";
    case 11: return "long[]";
  }
  return "?[]";
}

// "[I" -> "int[]", "[Ljava.lang.String;" -> "java.lang.String[]", "java/lang/Object" -> "java.lang.Object".
std::string JavaName(std::string s) {
  std::replace(s.begin(), s.end(), '/', '.');
  size_t dims = 0;
  while (dims < s.size() && s[dims] == '[') ++dims;
  if (dims == 0) return s;
  std::string base = s.substr(dims);
  if (base.size() >= 2 && base[0] == 'L' && base.back() == ';') {
    base = base.substr(1, base.size() - 2);
  } else if (base.size() == 1) {
    static const char* kNames[][2] = {{"Z", "boolean"}, {"C", "char"}, {"F", "float"}, {"D", "double"},
                                      {"B", "byte"},    {"S", "short"}, {"I", "int"},  {"J", "long"}};
    for (auto& n : kNames) {
      if (base == n[0]) base = n[1];
    }
  }
  for (size_t i = 0; i < dims; ++i) base += "[]";
  return base;
}

bool IsPlatform(const std::string& n) {
  for (const char* p : {"java.", "javax.", "sun.", "jdk.", "com.sun.", "libdump."}) {
    if (n.starts_with(p)) return true;
  }
  // Primitive arrays ("int[]", "int[][]").
  for (const char* p : {"boolean[", "char[", "float[", "double[", "byte[", "short[", "int[", "long["}) {
    if (n.starts_with(p)) return true;
  }
  return false;
}

struct FrameData {
  uint64_t method = 0;
  uint32_t class_serial = 0;
  int32_t line = 0;
};

class Pass1 final : public format::hprof::HprofVisitor {
 public:
  Pass1(HeapGraph& g, GraphBuilder& b) : g_(g), b_(b) {}
  // Told the offset every 2^16 objects.
  const Progress* progress = nullptr;

  void Header(std::string_view f, uint32_t id_size, uint64_t) override {
    g_.id_size = id_size;
    g_.format = std::string(f) + ", " + std::to_string(id_size) + "-byte ids";
    header_ = id_size * 2;
  }
  void Utf8(uint64_t id, std::string_view t) override { strings_[id] = std::string(t); }
  void LoadClass(uint32_t serial, uint64_t cls, uint32_t, uint64_t name) override {
    class_name_[cls] = name;
    class_by_serial_[serial] = cls;
  }
  void Frame(uint64_t id, uint64_t method, uint64_t, uint64_t, uint32_t cs, int32_t line) override {
    frames_[id] = {method, cs, line};
  }
  void Trace(uint32_t serial, uint32_t thread, std::span<const uint64_t> f) override {
    traces_[serial] = {thread, std::vector<uint64_t>(f.begin(), f.end())};
  }
  void StartThread(uint32_t serial, uint64_t, uint32_t trace, uint64_t name) override {
    thread_start_[serial] = {trace, name};
  }
  void Root(uint64_t, const HprofRoot& r) override { roots_.push_back(r); }
  void ClassDump(uint64_t at, const HprofClass& c) override {
    const uint32_t ci = ClassFor(c.id);
    ClassInfo& k = g_.classes[ci];
    k.id = c.id;
    k.instance_size = c.instance_size;
    dumped_[ci] = true;
    super_id_[ci] = c.super;
    uint32_t off = 0;
    k.fields.clear();
    for (const auto& f : c.fields) {
      FieldInfo fi;
      fi.name = std::to_string(f.name);  // an id until the strings are known
      fi.type = f.type;
      fi.size = format::hprof::BasicTypeSize(f.type, g_.id_size);
      fi.offset = off;
      fi.is_ref = f.type == 2;
      off += fi.size;
      k.fields.push_back(std::move(fi));
    }
    k.statics.clear();
    for (const auto& s : c.statics) k.statics.push_back({std::to_string(s.name), s.type, s.value});
    // ClassClass() may add a class: index again rather than keep `k`.
    const uint32_t class_class = ClassClass();
    g_.classes[ci].object = Add(c.id, class_class, 0, at);
  }
  void Instance(uint64_t at, uint64_t id, uint32_t trace, uint64_t cls, std::span<const uint8_t> f) override {
    const uint32_t ci = ClassFor(cls);
    const uint64_t size = dumped_[ci] ? g_.classes[ci].instance_size : header_ + f.size();
    NoteTrace(Add(id, ci, size, at), trace);
  }
  void ObjArray(uint64_t at, uint64_t id, uint32_t trace, uint64_t cls, uint32_t n) override {
    const uint32_t ci = ClassFor(cls);
    g_.classes[ci].array_type = 2;
    NoteTrace(Add(id, ci, Align(header_ + 4 + uint64_t{n} * g_.id_size), at), trace);
  }
  void PrimArray(uint64_t at, uint64_t id, uint32_t trace, uint8_t type, uint32_t n) override {
    NoteTrace(Add(id, PrimClass(type), Align(header_ + 4 + uint64_t{n} * format::hprof::BasicTypeSize(type, 8)), at),
              trace);
  }

  // After the pass: names, superclasses, synthetic classes merged into the
  // dumped ones of the same name, roots, threads.
  void Finish() {
    auto str = [&](uint64_t id) -> std::string {
      auto it = strings_.find(id);
      return it != strings_.end() ? it->second : "string@" + std::to_string(id);
    };
    for (ClassInfo& c : g_.classes) {
      if (!c.name.empty()) continue;  // synthetic
      auto it = class_name_.find(c.id);
      char b[32];
      snprintf(b, sizeof b, "class@0x%llx", static_cast<unsigned long long>(c.id));
      c.name = it != class_name_.end() ? JavaName(str(it->second)) : b;
      for (FieldInfo& f : c.fields) f.name = str(std::stoull(f.name));
      for (StaticInfo& s : c.statics) s.name = str(std::stoull(s.name));
    }
    for (auto& [ci, sup] : super_id_) {
      auto it = class_of_.find(sup);
      if (sup != 0 && it != class_of_.end()) g_.classes[ci].super = it->second;
    }
    // Synthetic classes (primitive arrays, java.lang.Class) become the
    // dumped class of the same name when there is one.
    std::unordered_map<std::string, uint32_t> by_name;
    for (uint32_t c = 0; c < g_.classes.size(); ++c) {
      if (!synthetic_[c]) by_name.emplace(g_.classes[c].name, c);
    }
    std::vector<uint32_t> remap(g_.classes.size());
    bool any = false;
    for (uint32_t c = 0; c < g_.classes.size(); ++c) {
      remap[c] = c;
      if (!synthetic_[c]) continue;
      auto it = by_name.find(g_.classes[c].name);
      if (it != by_name.end()) {
        remap[c] = it->second;
        g_.classes[it->second].array_type = g_.classes[c].array_type;
        g_.classes[c].name += " (merged)";
        any = true;
      }
    }
    if (any) {
      for (uint32_t& c : g_.cls) c = remap[c];
    }
    for (ClassInfo& c : g_.classes) c.platform = IsPlatform(c.name);
    // java.lang.ref.Reference and its subclasses: the referent is weak.
    auto ref = by_name.find("java.lang.ref.Reference");
    if (ref != by_name.end()) {
      for (uint32_t c = 0; c < g_.classes.size(); ++c) g_.classes[c].weak = g_.IsSubclass(c, ref->second);
    }

    // Threads, from their ROOT THREAD OBJECT (serial, trace).
    std::unordered_map<uint32_t, uint32_t> thread_of_serial;
    for (const HprofRoot& r : roots_) {
      if (r.kind != format::hprof::kSubRootThreadObject || thread_of_serial.count(r.thread_serial)) continue;
      ThreadInfo t;
      t.id = r.thread_serial;
      t.object = g_.Find(r.object);
      auto st = thread_start_.find(r.thread_serial);
      t.name = st != thread_start_.end() ? str(st->second.second) : "thread " + std::to_string(r.thread_serial);
      t.frames = TraceFrames(r.depth, str);
      thread_of_serial[r.thread_serial] = static_cast<uint32_t>(g_.threads.size());
      g_.threads.push_back(std::move(t));
    }
    std::unordered_map<uint8_t, uint32_t> kind_index;
    for (const HprofRoot& r : roots_) {
      const Index o = g_.Find(r.object);
      if (o == kNone) {
        ++g_.dropped_roots;
        continue;
      }
      auto [it, added] = kind_index.try_emplace(r.kind, static_cast<uint32_t>(g_.root_kinds.size()));
      if (added) g_.root_kinds.push_back(format::hprof::RootKindName(r.kind));
      heapgraph::Root root;
      root.object = o;
      root.kind = it->second;
      if (r.has_thread) {
        auto t = thread_of_serial.find(r.thread_serial);
        if (t != thread_of_serial.end()) {
          root.thread = t->second;
          const auto& frames = g_.threads[t->second].frames;
          if (r.kind == format::hprof::kSubRootJavaFrame && r.depth < frames.size()) root.label = frames[r.depth];
        }
      }
      g_.roots.push_back(std::move(root));
    }
    // Allocation traces of objects that name a non-empty one.
    std::unordered_map<uint32_t, uint32_t> stack_of_trace;
    for (const auto& [obj, trace] : object_traces_) {
      auto [it, added] = stack_of_trace.try_emplace(trace, static_cast<uint32_t>(g_.stacks.size()));
      if (added) g_.stacks.push_back(TraceFrames(trace, str));
      g_.stack_of.emplace(obj, it->second);
    }
  }

 private:
  template <typename Str>
  std::vector<std::string> TraceFrames(uint32_t serial, const Str& str) {
    std::vector<std::string> out;
    auto t = traces_.find(serial);
    if (t == traces_.end()) return out;
    for (uint64_t f : t->second.second) {
      auto it = frames_.find(f);
      if (it == frames_.end()) {
        out.push_back("frame@" + std::to_string(f));
        continue;
      }
      std::string cls;
      auto c = class_by_serial_.find(it->second.class_serial);
      if (c != class_by_serial_.end()) {
        auto n = class_name_.find(c->second);
        if (n != class_name_.end()) cls = JavaName(str(n->second)) + ".";
      }
      out.push_back(cls + str(it->second.method) +
                    (it->second.line > 0 ? ":" + std::to_string(it->second.line) : std::string()));
    }
    return out;
  }

  // Every object of the pass comes here: the progress of the pass too.
  Index Add(uint64_t id, uint32_t cls, uint64_t size, uint64_t at) {
    const Index obj = b_.AddObject(id, cls, size, at);
    if (progress && (obj & 0xFFFF) == 0) (*progress)("objects", at);
    return obj;
  }
  void NoteTrace(Index obj, uint32_t trace) {
    auto t = traces_.find(trace);
    if (t != traces_.end() && !t->second.second.empty()) object_traces_.emplace_back(obj, trace);
  }
  static uint64_t Align(uint64_t v) { return (v + 7) & ~uint64_t{7}; }

  uint32_t NewClass(ClassInfo c, bool synthetic) {
    g_.classes.push_back(std::move(c));
    synthetic_.push_back(synthetic);
    dumped_.push_back(false);
    return static_cast<uint32_t>(g_.classes.size() - 1);
  }
  uint32_t ClassFor(uint64_t id) {
    auto it = class_of_.find(id);
    if (it != class_of_.end()) return it->second;
    ClassInfo c;
    c.id = id;
    const uint32_t ci = NewClass(std::move(c), false);
    class_of_[id] = ci;
    return ci;
  }
  uint32_t PrimClass(uint8_t type) {
    uint32_t& ci = prim_class_[type];
    if (ci == 0) {
      ClassInfo c;
      c.name = PrimName(type);
      c.array_type = type;
      ci = NewClass(std::move(c), true) + 1;
    }
    return ci - 1;
  }
  uint32_t ClassClass() {
    if (class_class_ == 0) {
      ClassInfo c;
      c.name = "java.lang.Class";
      class_class_ = NewClass(std::move(c), true) + 1;
    }
    return class_class_ - 1;
  }

  HeapGraph& g_;
  GraphBuilder& b_;
  uint32_t header_ = 16;
  std::unordered_map<uint64_t, std::string> strings_;
  std::unordered_map<uint64_t, uint64_t> class_name_;
  std::unordered_map<uint32_t, uint64_t> class_by_serial_;
  std::unordered_map<uint64_t, FrameData> frames_;
  std::unordered_map<uint32_t, std::pair<uint32_t, std::vector<uint64_t>>> traces_;
  std::unordered_map<uint32_t, std::pair<uint32_t, uint64_t>> thread_start_;
  std::vector<HprofRoot> roots_;
  std::unordered_map<uint64_t, uint32_t> class_of_;
  std::unordered_map<uint32_t, uint64_t> super_id_;
  std::vector<bool> synthetic_;
  std::vector<bool> dumped_;  // a CLASS DUMP was seen
  uint32_t prim_class_[16] = {};
  uint32_t class_class_ = 0;
  std::vector<std::pair<Index, uint32_t>> object_traces_;
};

// Pass 2: references, object by object in the order of pass 1.
class Pass2 final : public format::hprof::HprofVisitor {
 public:
  // Told the offset every 2^16 objects.
  const Progress* progress = nullptr;
  Pass2(HeapGraph& g, GraphBuilder& b) : g_(g), edges_(g, b, EdgeBatch::Match::kExact) {
    // Java's finalizer queue: instances of java.lang.ref.Finalizer hold the
    // objects waiting for finalization in their referent.
    for (uint32_t c = 0; c < g_.classes.size(); ++c) {
      if (g_.classes[c].name == "java.lang.ref.Finalizer") finalizer_class_ = c;
    }
  }

  void ClassDump(uint64_t at, const HprofClass& c) override {
    Next(at);
    if (c.super) Ref(c.super, 0);
    for (const auto& s : c.statics) {
      if (s.type == 2 && s.value) Ref(s.value, 0);
    }
  }
  void Instance(uint64_t at, uint64_t, uint32_t, uint64_t, std::span<const uint8_t> data) override {
    const Index me = Next(at);
    // Fields: the class's own, then its superclasses', in data order.
    uint32_t off = 0;
    const uint32_t id = g_.id_size;
    size_t steps = 0;
    for (Index c = g_.cls[me]; c != kNone && steps++ <= g_.classes.size(); c = g_.classes[c].super) {
      const ClassInfo& k = g_.classes[c];
      for (const FieldInfo& f : k.fields) {
        if (off + f.size > data.size()) return;  // fewer bytes than the layout: the rest is unknown
        if (f.is_ref) {
          uint64_t v = 0;
          for (uint32_t i = 0; i < id; ++i) v = v << 8 | data[off + i];
          const bool weak = k.weak && f.name == "referent";
          if (v) {
            Ref(v, !weak ? 0
                         : g_.cls[me] == finalizer_class_ ? EdgeBatch::kWeak | EdgeBatch::kFinalizer
                                                          : EdgeBatch::kWeak);
          }
        }
        off += f.size;
      }
    }
  }
  void ObjArray(uint64_t at, uint64_t, uint32_t, uint64_t, uint32_t) override { Next(at); }
  void ObjArrayElements(std::span<const uint64_t> ids) override {
    for (uint64_t v : ids) {
      if (v) Ref(v, 0);
    }
  }
  void PrimArray(uint64_t at, uint64_t, uint32_t, uint8_t, uint32_t) override { Next(at); }

  Index count() const { return next_; }
  void Finish() { edges_.Finish(); }

 private:
  Index Next(uint64_t at) {
    if (next_ >= g_.size() || g_.where[next_] != at)
      throw format::FormatError(at, "heap", "the file changed while it was read");
    if (progress && (next_ & 0xFFFF) == 0) (*progress)("references", at);
    edges_.Begin(next_);
    return next_++;
  }
  // Resolved by the batch, on other threads (edge_batch.h): a miss counts
  // as dangling there.
  void Ref(uint64_t id, uint8_t flags) { edges_.Word(id, flags); }

  HeapGraph& g_;
  EdgeBatch edges_;
  Index next_ = 0;
  uint32_t finalizer_class_ = UINT32_MAX;  // none yet
};

}  // namespace

void LoadHprof(const std::string& path, HeapGraph& g, const Progress& progress) {
  g.source = Source::kHprof;
  g.path = path;
  GraphBuilder b(g);
  {
    const tools::InputFile fd = OpenInput(path);
    format::hprof::HprofReader reader(fd.fd());
    Pass1 p(g, b);
    if (progress) progress("objects", 0);
    if (progress) p.progress = &progress;
    reader.Read(p);
    b.FinishObjects();
    p.Finish();
  }
  const tools::InputFile fd = OpenInput(path);
  format::hprof::HprofReader reader(fd.fd());
  Pass2 p(g, b);
  if (progress) progress("references", 0);
  if (progress) p.progress = &progress;
  reader.Read(p);
  p.Finish();
  if (p.count() != g.size()) throw format::FormatError(reader.offset(), "heap", "the file changed while it was read");
  b.FinishEdges();
}

}  // namespace libdump::heapgraph
