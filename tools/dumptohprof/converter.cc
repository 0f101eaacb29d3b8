#include "converter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dump_catalog.h"
#include "libdump/format/hprof_classes.h"
#include "libdump/format/hprof_standard_classes.h"
#include "libdump/format/reader.h"
#include "type_plan.h"

namespace libdump::dumptohprof {
namespace {

namespace hp = format::hprof;
using hp::Id;
using hp::kEmptyTrace;

constexpr size_t kWholePayload = size_t{64} << 20;  // objects up to this are looked at in one span
constexpr uint64_t kMaxArrayBody = UINT32_MAX - 64;  // an array record must fit a 32-bit length

std::string HexAddr(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class Dump {
 public:
  explicit Dump(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path);
    // Read into the reader's buffer, not mapped in place (ReaderOptions::
    // map_file): on the development VM the mapped passes took 2.5 times the
    // CPU time of read() into a reused buffer (1e7 objects: 2.6 s vs 1.25 s
    // wall, 1.9 s vs 0.8 s user), page-table work and TLB misses on every
    // window costing more than the one copy out of the page cache.
    reader_ = std::make_unique<format::Reader>(fd_);
  }
  ~Dump() {
    reader_.reset();
    ::close(fd_);
  }
  format::Reader& reader() { return *reader_; }

 private:
  int fd_ = -1;
  std::unique_ptr<format::Reader> reader_;
};

struct PlannedType {
  TypePlan plan;
  Id instance_class = 0;
  Id array_class = 0;
  uint64_t data_size = 0;      // instance data bytes
  uint64_t counts[3] = {};     // objects written, by Shape
};

// Objects with no type, or a type no record defines.
struct UntypedCounts {
  uint64_t arrays = 0;
  uint64_t bytes = 0;
};

class Converter {
 public:
  Converter(const std::string& path, hp::Output& out, const ConvertOptions& o) : path_(path), out_(out), o_(o) {}

  ConvertStats Run() {
    {
      Dump d(path_);
      catalog_.Scan(d.reader(), [&](uint64_t off) { Progress(1, off); });
      stats_.dump_bytes = d.reader().offset();
    }
    const format::ParamsRecord& p = catalog_.params();
    ptr_ = p.ptr_size == 4 ? 4 : 8;
    big_ = p.big_endian != 0;
    stats_.index_bytes = catalog_.index().memory_bytes();
    if (catalog_.index().end() > (uint64_t{1} << 62)) {
      throw format::FormatError(0, "kind 1 (object)", "object addresses above 2^62 leave no room for hprof ids");
    }
    hp::WriterOptions wo;
    wo.max_segment = o_.max_segment;
    wo.timestamp_ms = o_.timestamp_ms;
    writer_.emplace(out_, wo);
    ids_.emplace(catalog_.index().end() + 4096);
    strings_.emplace(*writer_, *ids_);
    classes_.emplace(*writer_, *strings_, *ids_);
    std_.emplace(*classes_);
    DeclareClasses();
    DeclareThreads();
    DeclareAllocStacks();
    classes_->DumpAll();
    WriteThreads();
    {
      Dump d(path_);
      SecondPass(d.reader());
    }
    writer_->HeapDumpEnd();
    CollectCounts();
    stats_.classes = classes_->size();
    stats_.hprof_bytes = writer_->bytes_written();
    stats_.segments = writer_->segments();
    return std::move(stats_);
  }

 private:
  void Progress(int pass, uint64_t off) {
    if (o_.progress) o_.progress(pass, off);
  }

  std::string UniqueName(std::string name) {
    while (!used_names_.insert(name).second) name += "'";
    return name;
  }

  void DeclareClasses() {
    for (const char* n : {"java/lang/Object", "java/lang/Class", "java/lang/ClassLoader", "java/lang/String",
                          "java/lang/Thread", "libdump/Root", "(untyped)"}) {
      used_names_.insert(n);
    }
    const hp::FieldSpec root_fields[] = {{"description", hp::Type::kObject}, {"target", hp::Type::kObject}};
    root_class_ = classes_->Add("libdump/Root", std_->object(), root_fields);
    untyped_array_ = classes_->Add("[L(untyped);", std_->object(), {});
    DeclareMemStats();
    for (auto& [id, plan] : PlanTypes(catalog_)) {
      PlannedType& t = types_[id];
      plan.name = UniqueName(plan.name);
      t.plan = std::move(plan);
      if (t.plan.regular == Shape::kInstance) {
        t.instance_class = classes_->Add(t.plan.name, std_->object(), t.plan.specs, t.plan.instance_size);
        t.data_size = classes_->DataSize(t.instance_class);
      }
      if (t.plan.regular == Shape::kWordArray || t.plan.array == Shape::kWordArray) {
        t.array_class = classes_->Add("[L" + t.plan.name + ";", std_->object(), {});
      }
    }
  }

  // The allocator's statistics as static long fields of libdump.MemStats,
  // which every reader shows on the class.
  void DeclareMemStats() {
    const auto& stats = catalog_.mem_stats();
    if (stats.empty()) return;
    const Id cls = classes_->Add(UniqueName("libdump/MemStats"), std_->object(), {});
    std::vector<hp::StaticField> statics;
    for (const format::MemStat& m : stats) {
      if (statics.size() == UINT16_MAX) break;
      statics.push_back({strings_->Intern(m.name), hp::Type::kLong, m.value});
    }
    classes_->SetStatics(cls, std::move(statics));
  }

  // The class a frame's method belongs to: its module.
  uint32_t ModuleSerial(uint64_t pc, Id* source) {
    const auto& mods = catalog_.modules();
    for (size_t i = 0; i < mods.size(); ++i) {
      if (pc >= mods[i].start && pc < mods[i].end) {
        auto [it, inserted] = module_classes_.try_emplace(mods[i].path, 0);
        if (inserted) it->second = classes_->Add(UniqueName(Basename(mods[i].path)), std_->object(), {});
        *source = strings_->Intern(mods[i].path);
        return classes_->Serial(it->second);
      }
    }
    if (unknown_module_ == 0) unknown_module_ = classes_->Add(UniqueName("(unknown module)"), std_->object(), {});
    *source = strings_->Intern("");
    return classes_->Serial(unknown_module_);
  }

  void DeclareThreads() {
    const Id signature = strings_->Intern("()");
    uint32_t serial = 0;
    for (const Thread& t : catalog_.threads()) {
      ++serial;
      const uint32_t trace = serial + 1;  // serial 1 is the empty trace
      std::vector<Id> frames;
      for (size_t depth = 0; depth < t.frames.size(); ++depth) {
        const format::FrameRecord& f = t.frames[depth];
        Id source = 0;
        const uint32_t cls = ModuleSerial(f.pc, &source);
        const Id frame = ids_->Next();
        writer_->Frame(frame, strings_->Intern(f.name.empty() ? HexAddr(f.pc) : f.name), signature, source, cls, -1);
        frames.push_back(frame);
        frame_roots_.try_emplace(f.sp, FrameRoot{serial, static_cast<uint32_t>(depth)});
      }
      writer_->Trace(trace, serial, frames);
      const Id thread = ids_->Next();
      std::string name = t.name.empty() ? "thread " + std::to_string(t.goroutine.goid) : t.name;
      writer_->StartThread(serial, thread, trace, strings_->Intern(name), 0, 0);
      threads_.push_back({thread, serial, trace, std::move(name)});
      stats_.frames += frames.size();
    }
    stats_.threads = threads_.size();
  }

  // One FRAME per allocation pc, named after a frame record at the same pc,
  // else module+offset (as in the module file), else the pc; one TRACE per
  // distinct allocation stack, numbered after the threads' traces.
  void DeclareAllocStacks() {
    const AllocStacks& a = catalog_.alloc_stacks();
    if (a.stacks.empty()) return;
    const Id signature = strings_->Intern("()");
    std::unordered_map<uint64_t, Id> frames;
    uint32_t serial = static_cast<uint32_t>(threads_.size()) + 2;
    std::vector<Id> trace;
    for (const std::vector<uint64_t>& pcs : a.stacks) {
      trace.clear();
      for (uint64_t pc : pcs) {
        auto [it, inserted] = frames.try_emplace(pc, 0);
        if (inserted) {
          Id source = 0;
          const uint32_t cls = ModuleSerial(pc, &source);
          it->second = ids_->Next();
          writer_->Frame(it->second, strings_->Intern(PcName(pc)), signature, source, cls, -1);
        }
        trace.push_back(it->second);
      }
      writer_->Trace(serial, 0, trace);
      alloc_traces_.push_back(serial++);
    }
  }

  std::string PcName(uint64_t pc) const {
    if (auto it = catalog_.alloc_stacks().names.find(pc); it != catalog_.alloc_stacks().names.end()) return it->second;
    for (const format::ModuleRecord& m : catalog_.modules()) {
      if (pc >= m.start && pc < m.end) return Basename(m.path) + "+" + HexAddr(pc - m.start + m.file_offset);
    }
    return HexAddr(pc);
  }

  void WriteThreads() {
    const auto& src = catalog_.threads();
    for (size_t i = 0; i < threads_.size(); ++i) {
      const format::GoroutineRecord& g = src[i].goroutine;
      hp::ThreadFields f;
      f.name = std_->WriteString(*writer_, *ids_, threads_[i].name);
      f.tid = static_cast<int64_t>(g.goid);
      f.daemon = g.is_background;
      f.status = g.status == format::kStatusWaiting || g.status == format::kStatusIdle ? hp::kThreadWaiting
                                                                                        : hp::kThreadRunnable;
      std_->WriteThread(*writer_, threads_[i].id, f);
      writer_->RootThreadObject(threads_[i].id, threads_[i].serial, threads_[i].trace);
      ++stats_.roots;
    }
  }

  void SecondPass(format::Reader& reader) {
    format::Record r;
    uint64_t n = 0;
    while (reader.Next(r)) {
      switch (r.kind) {
        case format::Kind::kObject: Object(reader, r); break;
        case format::Kind::kStackRoot: StackRoot(r.stack_root); break;
        case format::Kind::kDataRoot: DataRoot(r.data_root); break;
        case format::Kind::kOtherRoot: OtherRoot(r.other_root); break;
        case format::Kind::kFinalizer: Finalizer(r.finalizer); break;
        default: break;
      }
      if ((++n & 0xFFFF) == 0) Progress(2, reader.offset());
    }
    Progress(2, reader.offset());
  }

  // --- roots ---------------------------------------------------------------

  Id Resolve(uint64_t p) {
    const Id id = catalog_.index().Find(p);
    if (id == 0) ++stats_.unresolved_roots;
    return id;
  }

  void StackRoot(const format::StackRootRecord& r) {
    const Id obj = Resolve(r.ptr);
    if (obj == 0) return;
    if (auto it = frame_roots_.find(r.frame); it != frame_roots_.end()) {
      writer_->RootJavaFrame(obj, it->second.thread_serial, it->second.depth);
    } else {
      writer_->RootUnknown(obj);
    }
    ++stats_.roots;
  }

  // Data roots: JNI globals, whose second id keeps the address of the slot.
  void DataRoot(const format::DataRootRecord& r) {
    const Id obj = Resolve(r.ptr);
    if (obj == 0) return;
    writer_->RootJniGlobal(obj, r.addr);
    ++stats_.roots;
  }

  // The target is a root, and so is a libdump.Root holding the description and
  // the target, so that readers show why the object is alive.
  void OtherRoot(const format::OtherRootRecord& r) {
    const Id obj = Resolve(r.ptr);
    if (obj == 0) return;
    const Id description = std_->WriteString(*writer_, *ids_, r.description);
    uint8_t data[16];
    Be(data, description, 8);
    Be(data + 8, obj, 8);
    const Id holder = ids_->Next();
    writer_->Instance(holder, kEmptyTrace, root_class_, data);
    writer_->RootUnknown(obj);
    writer_->RootUnknown(holder);
    stats_.roots += 2;
  }

  // Like the JVM's: a java.lang.ref.Finalizer refers to the object; it is a
  // root itself, as the JVM's are through Finalizer.unfinalized.
  void Finalizer(const format::FinalizerRecord& r) {
    const Id obj = Resolve(r.obj);
    if (obj == 0) return;
    writer_->RootUnknown(std_->WriteFinalizer(*writer_, *ids_, obj));
    ++stats_.roots;
    ++stats_.finalizers;
  }

  // --- objects -------------------------------------------------------------

  static void Be(uint8_t* out, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
  }
  static void Be64(uint8_t* out, uint64_t v) {
    v = __builtin_bswap64(v);
    std::memcpy(out, &v, 8);
  }

  uint64_t Word(const uint8_t* p) const {
    if (ptr_ == 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return big_ ? __builtin_bswap64(v) : v;
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return big_ ? __builtin_bswap32(v) : v;
  }

  // A scalar field of n bytes into the big-endian hprof.
  void Scalar(uint8_t* out, const uint8_t* src, uint32_t n) const {
    if (big_) return static_cast<void>(std::memcpy(out, src, n));
    switch (n) {
      case 1: *out = *src; return;
      case 2: { uint16_t v; std::memcpy(&v, src, 2); v = __builtin_bswap16(v); std::memcpy(out, &v, 2); return; }
      case 4: { uint32_t v; std::memcpy(&v, src, 4); v = __builtin_bswap32(v); std::memcpy(out, &v, 4); return; }
      case 8: { uint64_t v; std::memcpy(&v, src, 8); v = __builtin_bswap64(v); std::memcpy(out, &v, 8); return; }
      default: for (uint32_t i = 0; i < n; ++i) out[i] = src[n - 1 - i];
    }
  }

  void CollectCounts() {
    auto& out = stats_.classes_by_type;
    for (const auto& [id, t] : types_) {
      const std::string prim = hp::PrimitiveArrayClassName(t.plan.prim);
      const std::string names[3] = {t.plan.name, "[L" + t.plan.name + ";", prim};
      for (int s = 0; s < 3; ++s) {
        if (t.counts[s] != 0) out[{id, DisplayName(names[s])}] += t.counts[s];
      }
    }
    for (const auto& [id, c] : untyped_) {
      if (c.arrays != 0) out[{id, DisplayName("[L(untyped);")}] += c.arrays;
      if (c.bytes != 0) out[{id, DisplayName("[B")}] += c.bytes;
    }
  }

  void Object(format::Reader& reader, const format::Record& r) {
    const format::ObjectRecord& o = r.object;
    ++stats_.objects;
    trace_ = kEmptyTrace;
    if (const auto& of = catalog_.alloc_stacks().of_object; !of.empty()) {
      if (auto it = of.find(o.addr); it != of.end()) {
        trace_ = alloc_traces_[it->second];
        ++stats_.alloc_stacks;
      }
    }
    if (!catalog_.duplicates().empty() && catalog_.duplicates().contains(o.addr) &&
        !seen_duplicates_.insert(o.addr).second) {
      throw format::FormatError(r.offset, "kind 1 (object)",
                                "object " + HexAddr(o.addr) + " starts where an earlier object starts");
    }
    // Consecutive objects often share a type: skip the hash lookup then.
    if (o.type != last_type_id_ || last_type_ == nullptr) {
      auto it = o.type == 0 ? types_.end() : types_.find(o.type);
      if (it == types_.end()) return Untyped(reader, o, untyped_[o.type]);
      last_type_id_ = o.type;
      last_type_ = &it->second;
    }
    PlannedType& t = *last_type_;
    const Shape shape = o.kind == format::kObjRegular ? t.plan.regular : t.plan.array;
    ++t.counts[static_cast<int>(shape)];
    switch (shape) {
      case Shape::kInstance: return Instance(reader, o, t);
      case Shape::kWordArray: return Words(reader, o, t.array_class, t.plan.pointer_words);
      case Shape::kPrimitiveArray: return Primitives(reader, o, t.plan.prim);
    }
  }

  void Instance(format::Reader& reader, const format::ObjectRecord& o, const PlannedType& t) {
    const TypePlan& plan = t.plan;
    std::span<const uint8_t> payload;
    if (o.size <= kWholePayload) {
      payload = reader.Payload(kWholePayload);
    } else {
      prefix_.clear();
      reader.ReadPayload([&](std::span<const uint8_t> c) {
        const size_t take = std::min<size_t>(c.size(), plan.prefix - std::min<size_t>(plan.prefix, prefix_.size()));
        prefix_.insert(prefix_.end(), c.begin(), c.begin() + take);
      });
      payload = prefix_;
    }
    data_.assign(t.data_size, 0);
    uint8_t* out = data_.data();
    for (const FieldPlan& f : plan.fields) {
      const bool inside = f.offset < payload.size() && payload.size() - f.offset >= f.size;
      if (f.pointer) {
        Be64(out, inside ? catalog_.index().Find(Word(payload.data() + f.offset)) : 0);
        out += 8;
        continue;
      }
      if (inside && !o_.redact) Scalar(out, payload.data() + f.offset, f.size);
      out += f.size;
    }
    writer_->Instance(o.addr, trace_, t.instance_class, data_);
    ++stats_.instances;
  }

  uint64_t CapLength(uint64_t length, uint64_t unit) {
    if (length * unit <= kMaxArrayBody) return length;
    ++stats_.truncated_arrays;
    return kMaxArrayBody / unit;
  }

  // Calls fn(unit_bytes) for each of the first `count` units of `unit` bytes
  // of the payload, joining units split between chunks.
  template <typename Fn>
  static void ForEachUnit(format::Reader& reader, unsigned unit, uint64_t count, Fn&& fn) {
    uint8_t carry[8];
    unsigned carried = 0;
    uint64_t done = 0;
    reader.ReadPayload([&](std::span<const uint8_t> c) {
      size_t i = 0;
      if (carried > 0) {
        while (carried < unit && i < c.size()) carry[carried++] = c[i++];
        if (carried < unit) return;
        if (done < count) fn(carry), ++done;
        carried = 0;
      }
      for (; i + unit <= c.size() && done < count; i += unit, ++done) fn(c.data() + i);
      if (done < count) {
        while (i < c.size()) carry[carried++] = c[i++];
      }
    });
  }

  void Words(format::Reader& reader, const format::ObjectRecord& o, Id cls, const std::vector<bool>& pointer_words) {
    const uint64_t length = CapLength(o.size / ptr_, hp::kIdSize);
    writer_->BeginObjectArray(o.addr, trace_, cls, static_cast<uint32_t>(length));
    ids_buf_.clear();
    uint64_t w = 0;
    const size_t period = pointer_words.size();
    ForEachUnit(reader, ptr_, length, [&](const uint8_t* p) {
      ids_buf_.push_back(pointer_words[w++ % period] ? catalog_.index().Find(Word(p)) : 0);
      if (ids_buf_.size() == 4096) writer_->Ids(ids_buf_), ids_buf_.clear();
    });
    writer_->Ids(ids_buf_);
    ++stats_.object_arrays;
  }

  void Primitives(format::Reader& reader, const format::ObjectRecord& o, hp::Type type) {
    const unsigned k = hp::TypeSize(type);
    const uint64_t length = CapLength(o.size / k, k);
    writer_->BeginPrimitiveArray(o.addr, trace_, type, static_cast<uint32_t>(length));
    uint64_t left = length * k;
    if (o_.redact) {
      const std::vector<uint8_t> zeros(std::min<uint64_t>(left, 1 << 16), 0);
      for (; left > 0; left -= std::min<uint64_t>(left, zeros.size())) {
        writer_->Raw(std::span(zeros).first(std::min<uint64_t>(left, zeros.size())));
      }
    } else if ((k == 1 || big_) && o.size <= kWholePayload) {
      writer_->Raw(reader.Payload(kWholePayload).first(left));
    } else if (k == 1 || big_) {
      reader.ReadPayload([&](std::span<const uint8_t> c) {
        const size_t take = std::min<uint64_t>(left, c.size());
        writer_->Raw(c.first(take));
        left -= take;
      });
    } else {
      bytes_buf_.clear();
      ForEachUnit(reader, k, length, [&](const uint8_t* p) {
        for (unsigned i = k; i-- > 0;) bytes_buf_.push_back(p[i]);
        if (bytes_buf_.size() >= (1 << 16)) writer_->Raw(bytes_buf_), bytes_buf_.clear();
      });
      writer_->Raw(bytes_buf_);
    }
    ++stats_.primitive_arrays;
  }

  // No layout: an object array when some aligned word points into a dumped
  // object, else byte[]. Objects too large to look at twice are taken as arrays.
  void Untyped(format::Reader& reader, const format::ObjectRecord& o, UntypedCounts& counts) {
    static const std::vector<bool> kAll{true};
    if (o.size > kWholePayload) {
      ++counts.arrays;
      return Words(reader, o, untyped_array_, kAll);
    }
    const std::span<const uint8_t> payload = reader.Payload(kWholePayload);
    const uint64_t words = payload.size() / ptr_;
    ids_buf_.resize(words);
    bool any = false;
    for (uint64_t i = 0; i < words; ++i) {
      ids_buf_[i] = catalog_.index().Find(Word(payload.data() + i * ptr_));
      any |= ids_buf_[i] != 0;
    }
    if (any) {
      ++counts.arrays;
      writer_->ObjectArray(o.addr, trace_, untyped_array_, ids_buf_);
      ++stats_.object_arrays;
      return;
    }
    ++counts.bytes;
    const uint64_t length = CapLength(payload.size(), 1);
    writer_->BeginPrimitiveArray(o.addr, trace_, hp::Type::kByte, static_cast<uint32_t>(length));
    if (o_.redact) {
      bytes_buf_.assign(length, 0);
      writer_->Raw(bytes_buf_);
    } else {
      writer_->Raw(payload.first(length));
    }
    ++stats_.primitive_arrays;
  }

  struct FrameRoot {
    uint32_t thread_serial;
    uint32_t depth;
  };
  struct ThreadOut {
    Id id;
    uint32_t serial;
    uint32_t trace;
    std::string name;
  };

  const std::string path_;
  hp::Output& out_;
  const ConvertOptions& o_;
  ConvertStats stats_;
  DumpCatalog catalog_;
  unsigned ptr_ = 8;
  bool big_ = false;
  std::optional<hp::Writer> writer_;
  std::optional<hp::IdAllocator> ids_;
  std::optional<hp::StringTable> strings_;
  std::optional<hp::ClassTable> classes_;
  std::optional<hp::StandardClasses> std_;
  std::unordered_map<uint64_t, PlannedType> types_;
  std::unordered_set<std::string> used_names_;
  std::unordered_map<std::string, Id> module_classes_;
  Id unknown_module_ = 0;
  Id root_class_ = 0;
  Id untyped_array_ = 0;
  std::vector<ThreadOut> threads_;
  std::unordered_map<uint64_t, FrameRoot> frame_roots_;  // frame sp -> thread and depth
  std::unordered_set<uint64_t> seen_duplicates_;
  std::unordered_map<uint64_t, UntypedCounts> untyped_;  // by type id
  std::vector<uint32_t> alloc_traces_;  // TRACE serial of each allocation stack
  uint32_t trace_ = kEmptyTrace;        // of the object being written
  uint64_t last_type_id_ = 0;
  PlannedType* last_type_ = nullptr;
  std::vector<uint8_t> prefix_, data_, bytes_buf_;
  std::vector<Id> ids_buf_;
};

}  // namespace

ConvertStats Convert(const std::string& dump_path, hp::Output& out, const ConvertOptions& options) {
  return Converter(dump_path, out, options).Run();
}

void WriteClassMap(std::ostream& out, const ConvertStats& stats) {
  for (const auto& [key, count] : stats.classes_by_type) {
    out << HexAddr(key.first) << '\t' << key.second << '\t' << count << '\n';
  }
}

}  // namespace libdump::dumptohprof
