#include "object_detail.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "libdump/format/hprof_reader.h"
#include "libdump/format/reader.h"
#include "load.h"

namespace libdump::heapgraph {
namespace {

std::string Hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

const char* TypeName(uint8_t t) {
  switch (t) {
    case 2: return "object";
    case 4: return "boolean";
    case 5: return "char";
    case 6: return "float";
    case 7: return "double";
    case 8: return "byte";
    case 9: return "short";
    case 10: return "int";
    case 11: return "long";
  }
  return "?";
}

// A big-endian hprof value of type t as Java prints it.
std::string JavaValue(uint8_t t, uint64_t v) {
  switch (t) {
    case 4: return v ? "true" : "false";
    case 5: {
      if (v >= 32 && v < 127) return std::string("'") + static_cast<char>(v) + "'";
      return "\\u" + std::to_string(v);
    }
    case 6: {
      float f;
      const uint32_t u = static_cast<uint32_t>(v);
      std::memcpy(&f, &u, 4);
      return std::to_string(f);
    }
    case 7: {
      double d;
      std::memcpy(&d, &v, 8);
      return std::to_string(d);
    }
    case 8: return std::to_string(static_cast<int8_t>(v));
    case 9: return std::to_string(static_cast<int16_t>(v));
    case 10: return std::to_string(static_cast<int32_t>(v));
    case 11: return std::to_string(static_cast<int64_t>(v));
  }
  return Hex(v);
}

void Printable(std::string& text, uint32_t c) {
  if (c == '\n' || c == '\t' || (c >= 32 && c < 127)) {
    text.push_back(static_cast<char>(c));
  } else {
    text += '.';
  }
}

class HprofOne final : public format::hprof::HprofVisitor {
 public:
  HprofOne(const HeapGraph& g, ObjectDetail& d, uint64_t first, uint64_t max) : g_(g), d_(d), first_(first), max_(max) {}

  void ClassDump(uint64_t, const format::hprof::HprofClass& c) override {
    // The statics' names from the graph's class (same order as the record).
    const ClassInfo* k = nullptr;
    for (const ClassInfo& x : g_.classes) {
      if (x.id == c.id && x.object != kNone) k = &x;
    }
    if (c.super) Add("(superclass)", 2, c.super);
    for (size_t n = 0; n < c.statics.size(); ++n) {
      const auto& s = c.statics[n];
      Add(k && n < k->statics.size() ? "static " + k->statics[n].name : "static", s.type, s.value);
    }
  }
  void Instance(uint64_t, uint64_t, uint32_t, uint64_t cls, std::span<const uint8_t> data) override {
    const Index me = g_.Find(id_of_);
    uint32_t off = 0;
    size_t steps = 0;
    (void)cls;
    for (Index c = me == kNone ? kNone : g_.cls[me]; c != kNone && steps++ <= g_.classes.size();
         c = g_.classes[c].super) {
      for (const FieldInfo& f : g_.classes[c].fields) {
        if (off + f.size > data.size()) return;
        uint64_t v = 0;
        for (uint32_t i = 0; i < f.size; ++i) v = v << 8 | data[off + i];
        Add(f.name, f.type, v);
        off += f.size;
      }
    }
  }
  void ObjArray(uint64_t, uint64_t, uint32_t, uint64_t, uint32_t n) override { d_.elements = n; }
  void ObjArrayElements(std::span<const uint64_t> ids) override {
    for (uint64_t v : ids) {
      if (k_ >= first_ && k_ < first_ + max_) Add("[" + std::to_string(k_) + "]", 2, v);
      ++k_;
    }
  }
  void PrimArray(uint64_t, uint64_t, uint32_t, uint8_t t, uint32_t n) override {
    d_.elements = n;
    type_ = t;
    es_ = format::hprof::BasicTypeSize(t, 8);
  }
  void PrimArrayBytes(std::span<const uint8_t> b) override {
    for (uint8_t x : b) {
      cur_ = cur_ << 8 | x;
      if (++have_ < es_) continue;
      if (k_ >= first_ && k_ < first_ + max_) Add("[" + std::to_string(k_) + "]", type_, cur_);
      if ((type_ == 5 || type_ == 8) && d_.text.size() < 64 * 1024) Printable(d_.text, static_cast<uint32_t>(cur_ & 0xffff));
      ++k_;
      cur_ = 0;
      have_ = 0;
    }
  }
  uint64_t id_of_ = 0;

 private:
  void Add(const std::string& name, uint8_t t, uint64_t v) {
    FieldValue f;
    f.name = name;
    f.type = TypeName(t);
    if (t == 2) {
      f.value = v ? Hex(v) : "null";
      if (v) f.ref = g_.Find(v);
    } else {
      f.value = JavaValue(t, v);
    }
    d_.fields.push_back(std::move(f));
  }

  const HeapGraph& g_;
  ObjectDetail& d_;
  uint64_t first_, max_;
  uint64_t k_ = 0;
  uint8_t type_ = 0;
  uint32_t es_ = 1;
  uint32_t have_ = 0;
  uint64_t cur_ = 0;
};

ObjectDetail ReadHprof(const HeapGraph& g, Index i, uint64_t first, uint64_t max) {
  ObjectDetail d;
  const tools::InputFile fd = OpenInput(g.path);
  format::hprof::HprofReader reader(fd.fd(), {.buffer_size = 64 << 10});
  HprofOne one(g, d, first, max);
  one.id_of_ = g.ids[i];
  reader.ReadSubRecordAt(g.where[i], one);
  return d;
}

bool GoParamsFirst(const HeapGraph& g) {
  const tools::InputFile fd = OpenInput(g.path);
  format::Reader reader(fd.fd(), {.buffer_size = 4 << 10});
  format::Record r;
  return reader.Next(r) && r.kind == format::Kind::kParams;
}

ObjectDetail ReadDump(const HeapGraph& g, Index i, uint64_t first, uint64_t max) {
  ObjectDetail d;
  const tools::InputFile fd = OpenInput(g.path);
  // One record: a small buffer (the default 1 MiB would be read in full;
  // a path page reads up to 1,000 records). Bigger payloads are copied whole.
  format::Reader reader(fd.fd(), {.buffer_size = 4 << 10});
  format::Record r;
  // A Go dump's decoder takes its params (word size, byte order) from the
  // first record, as the open did; a dump without them is read from the
  // object on with the defaults the open used (its first record may run up
  // to the object, or be it). The decoder may give the object's synthetic
  // type before the object.
  if (reader.dialect() != format::Dialect::kLibdump && GoParamsFirst(g)) reader.Next(r);
  reader.Range(g.where[i], 0);
  bool got = reader.Next(r);
  while (got && r.kind == format::Kind::kType && g.go) got = reader.Next(r);
  if (!got || r.kind != format::Kind::kObject || r.object.addr != g.ids[i])
    throw format::FormatError(g.where[i], "object", "the file changed since it was opened");
  const auto data = reader.Payload(size_t{1} << 32);
  const ClassInfo& c = g.classes[g.cls[i]];
  auto le = [&](size_t off, size_t n) {
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = v << 8 | data[off + k];
    return v;
  };
  if (!c.fields.empty() && c.array_type == 0 && !g.go) {
    for (const FieldInfo& f : c.fields) {
      if (f.offset + uint64_t{f.size} > data.size()) continue;
      FieldValue v;
      v.name = f.name;
      if (f.is_ref || f.size == 0 || f.size > 8) {
        const uint64_t w = f.size == 4 ? le(f.offset, 4) : (f.offset + 8 <= data.size() ? le(f.offset, 8) : 0);
        v.type = f.is_ref ? "pointer" : "bytes";
        v.value = w ? Hex(w) : (f.is_ref ? "null" : "0");
        if (f.is_ref && w) v.ref = FindContaining(g, w);
      } else {
        v.type = "int" + std::to_string(f.size * 8);
        v.value = std::to_string(le(f.offset, f.size));
      }
      d.fields.push_back(std::move(v));
    }
  }
  // Every word, as pointers or data (untyped objects, arrays, anything
  // without named fields). A Go object's words are named by their offset
  // (the dump has no field names), those its type says hold pointers typed
  // "pointer".
  if (d.fields.empty()) {
    const size_t w = g.id_size == 4 ? 4 : 8;
    d.elements = data.size() / w;
    size_t next_ptr = 0;
    for (uint64_t k = first; k < d.elements && k < first + max; ++k) {
      FieldValue v;
      const uint64_t x = le(k * w, w);
      if (g.go) {
        v.name = "+" + std::to_string(k * w);
        while (next_ptr < c.fields.size() && c.fields[next_ptr].offset < k * w) ++next_ptr;
        const bool ptr = next_ptr < c.fields.size() && c.fields[next_ptr].offset == k * w;
        v.type = ptr ? "pointer" : "word";
        v.value = ptr && x == 0 ? "null" : Hex(x);
        if (ptr && x) v.ref = FindContaining(g, x);
      } else {
        v.name = "[" + std::to_string(k) + "]";
        v.type = "word";
        v.value = Hex(x);
        if (x) v.ref = FindContaining(g, x);
      }
      d.fields.push_back(std::move(v));
    }
  }
  bool printable = !data.empty();
  size_t len = 0;
  for (uint8_t b : data) {
    if (b == 0) break;
    if (b < 32 && b != '\n' && b != '\t') printable = false;
    ++len;
  }
  if (printable && len > 0) {
    for (size_t k = 0; k < len && k < 64 * 1024; ++k) Printable(d.text, data[k]);
  }
  return d;
}

}  // namespace

ObjectDetail ReadObject(const HeapGraph& g, Index i, uint64_t first, uint64_t max) {
  if (i >= g.size()) throw LoadError("no such object");
  return g.source == Source::kHprof ? ReadHprof(g, i, first, max) : ReadDump(g, i, first, max);
}

std::string FieldTo(const HeapGraph& g, Index from, Index to) {
  // Every element: the one holding `to` may be anywhere in an array.
  const ObjectDetail d = ReadObject(g, from, 0, UINT64_MAX / 2);
  for (const FieldValue& f : d.fields) {
    if (f.ref == to) return f.name;
  }
  return "";
}

std::vector<std::string> PathFields(const HeapGraph& g, const std::vector<Index>& path, size_t max_steps) {
  std::vector<std::string> out(path.size());
  const size_t first = path.size() > max_steps ? path.size() - max_steps : 1;
  for (size_t k = std::max<size_t>(first, 1); k < path.size(); ++k) out[k] = FieldTo(g, path[k - 1], path[k]);
  return out;
}

std::string StringValue(const HeapGraph& g, Index obj, size_t max_chars) {
  if (g.source != Source::kHprof || g.ClassName(obj) != "java.lang.String") return "";
  for (Index to : g.Out(obj)) {
    const std::string& n = g.ClassName(to);
    if (n == "char[]" || n == "byte[]") {
      std::string t = ReadObject(g, to, 0, 0).text;
      if (t.size() > max_chars) t = t.substr(0, max_chars) + "...";
      return t;
    }
  }
  return "";
}

}  // namespace libdump::heapgraph
