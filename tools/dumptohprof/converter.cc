#include "converter.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dump_catalog.h"
#include "go_class_plan.h"
#include "libdump/format/hprof_classes.h"
#include "libdump/format/hprof_ids.h"
#include "libdump/format/hprof_standard_classes.h"
#include "libdump/format/reader.h"
#include "object_writer.h"
#include "parallel_pass.h"
#include "type_plan.h"

namespace libdump::dumptohprof {
namespace {

namespace hp = format::hprof;
using hp::Id;
using hp::kEmptyTrace;

std::string HexAddr(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A pass over the dump. Read into the reader's buffer, not mapped in place
// (ReaderOptions::map_file): on the development VM the mapped passes took 2.5
// times the CPU time of read() into a reused buffer (1e7 objects: 2.6 s vs
// 1.25 s wall, 1.9 s vs 0.8 s user), page-table work and TLB misses on every
// window costing more than the one copy out of the page cache.
class Dump {
 public:
  Dump(const std::string& path, const format::ReaderOptions& options)
      : reader_(format::Reader::Open(path, options)) {}
  format::Reader& reader() { return *reader_; }

 private:
  std::unique_ptr<format::Reader> reader_;
};

class Converter {
 public:
  Converter(const std::string& path, hp::Output& out, const ConvertOptions& o)
      : path_(path), out_(out), o_(o), catalog_(o.chunk_bytes) {}

  ConvertStats Run() {
    {
      Dump d(path_, o_.reader);
      catalog_.set_include_own(o_.include_own);
      catalog_.Scan(d.reader(), [&](uint64_t off) { Progress(1, off); });
      stats_.dump_bytes = d.reader().offset();
      compressed_ = d.reader().compression() != format::Compression::kNone;
      // A Go runtime's dump maps one Go record onto several of the model's,
      // so its records cannot be split into ranges: converted serially.
      serial_only_ = compressed_ || d.reader().dialect() != format::Dialect::kLibdump;
    }
    if (o_.program != nullptr) {
      go_ = TypeGoObjects(path_, catalog_, *o_.program);
      stats_.go_typed = true;
      stats_.go = go_->stats;
      plan_.go_class_of = &go_->of_object;
    } else if (o_.named != nullptr && !o_.named->of_address.empty()) {
      const AddressIndex& index = catalog_.index();
      named_of_.assign(index.size(), 0);
      for (const auto& [addr, k] : o_.named->of_address) {
        const size_t pos = index.PositionOf(addr);
        if (pos != AddressIndex::kNone && k < o_.named->names.size()) named_of_[pos] = k;
      }
      plan_.go_class_of = &named_of_;
    }
    const format::ParamsRecord& p = catalog_.params();
    plan_.catalog = &catalog_;
    plan_.ptr = p.ptr_size == 4 ? 4 : 8;
    plan_.big = p.big_endian != 0;
    plan_.redact = o_.redact;
    stats_.index_bytes = catalog_.index().memory_bytes();
    if (catalog_.index().end() > hp::kMaxHprofObjectEnd) {  // the rule readdump --validate applies too
      throw format::FormatError(0, "kind 1 (object)", "object addresses above 2^62 leave no room for hprof ids");
    }
    hp::WriterOptions wo;
    wo.max_segment = o_.max_segment;
    wo.timestamp_ms = o_.timestamp_ms;
    wo.buffer_size = o_.writer_buffer;
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
    objects_.emplace(plan_, *writer_);
    ObjectCounts counts;
    if (const unsigned workers = Workers(); workers > 0) {
      std::optional<Dump> serial;  // opened when a serial chunk comes
      ParallelPass(
          path_, o_.reader, catalog_.chunks(), plan_, workers, *writer_,
          [&](const Chunk& c) {
            if (!serial) serial.emplace(path_, o_.reader);
            format::Reader& reader = serial->reader();
            reader.Range(c.start, c.end);
            format::Record r;
            while (reader.Next(r)) Serial(reader, r);
          },
          [&](uint64_t off) { Progress(2, off); }, counts);
    } else {
      Dump d(path_, o_.reader);
      SecondPass(d.reader());
    }
    counts.Add(objects_->counts());
    writer_->HeapDumpEnd();
    CollectCounts(counts);
    stats_.own_objects = catalog_.own_objects();
    stats_.own_bytes = catalog_.own_bytes();
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
    plan_.untyped_array = classes_->Add("[L(untyped);", std_->object(), {});
    DeclareMemStats();
    // Go classes first: a Go dump's own type records (its itabs' types) carry
    // the same names but no objects, and take the primes.
    DeclareGoClasses();
    for (auto& [id, plan] : PlanTypes(catalog_)) {
      PlannedType& t = plan_.types[id];
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

  // --binary: a class for each Go typing some object has.
  void DeclareGoClasses() {
    if (!go_) return DeclareNamedClasses();
    std::vector<bool> used(go_->typings.size(), false);
    for (uint32_t g : go_->of_object) used[g] = true;
    plan_.go_types.resize(go_->typings.size());
    for (size_t i = 1; i < go_->typings.size(); ++i) {
      if (!used[i]) continue;
      PlannedType& t = plan_.go_types[i];
      t.plan = PlanGoClass(*o_.program, go_->typings[i], plan_.ptr);
      if (t.plan.regular == Shape::kInstance) {
        t.plan.name = UniqueName(t.plan.name);
        t.instance_class = classes_->Add(t.plan.name, std_->object(), t.plan.specs, t.plan.instance_size);
        t.data_size = classes_->DataSize(t.instance_class);
      } else if (t.plan.regular == Shape::kWordArray) {
        // The array class's name, not the element's, must be unique.
        while (used_names_.contains("[L" + t.plan.name + ";")) t.plan.name += "'";
        used_names_.insert("[L" + t.plan.name + ";");
        t.array_class = classes_->Add("[L" + t.plan.name + ";", std_->object(), {});
      }
    }
  }

  // The typing pass's classes: object arrays of every word (pointers where a
  // word points into an object), as untyped objects are, under their name.
  void DeclareNamedClasses() {
    if (named_of_.empty()) return;
    const auto& names = o_.named->names;
    std::vector<bool> used(names.size(), false);
    for (uint32_t k : named_of_) used[k] = true;
    plan_.go_types.resize(names.size());
    for (size_t k = 1; k < names.size(); ++k) {
      if (!used[k]) continue;
      PlannedType& t = plan_.go_types[k];
      t.plan.name = names[k];
      t.plan.regular = Shape::kWordArray;
      t.plan.array = Shape::kWordArray;
      t.plan.conservative = true;
      t.plan.elem_words = 1;
      t.plan.pointer_words = {true};
      while (used_names_.contains("[L" + t.plan.name + ";")) t.plan.name += "'";
      used_names_.insert("[L" + t.plan.name + ";");
      t.array_class = classes_->Add("[L" + t.plan.name + ";", std_->object(), {});
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
        plan_.frame_roots.try_emplace(f.sp, FrameRoot{serial, static_cast<uint32_t>(depth)});
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
      plan_.alloc_traces.push_back(serial++);
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
      Serial(reader, r);
      if ((++n & 0xFFFF) == 0) Progress(2, reader.offset());
    }
    Progress(2, reader.offset());
  }

  // Threads for pass 2; 0: convert on this thread alone. A compressed dump
  // cannot be entered in the middle, and one with objects sharing an address
  // fails at the second of them, which only a pass in order finds.
  unsigned Workers() const {
    if (serial_only_ || !catalog_.duplicates().empty()) return 0;
    if (o_.threads != 0) return o_.threads > 1 ? o_.threads : 0;
    // One core goes to writing the file (the main thread, or the writer
    // thread of ThreadedFdOutput behind one converting thread): on 2 cores
    // one converting thread measured faster than two (0.90 s against 0.99 s
    // for 1e7 objects), three threads taking turns on two cores. Each worker
    // holds ~4 MiB (two fragments, a read buffer): at most 4.
    const unsigned cores = std::thread::hardware_concurrency();
    const unsigned n = std::min(4u, cores > 1 ? cores - 1 : 1);
    return n > 1 ? n : 0;
  }

  // Other roots and finalizers allocate ids, numbered in dump order: only
  // the main thread converts them.
  bool Serial(format::Reader& reader, const format::Record& r) {
    switch (r.kind) {
      case format::Kind::kOtherRoot: OtherRoot(r.other_root); return true;
      case format::Kind::kFinalizer: Finalizer(r.finalizer); return true;
      default: return objects_->Convert(reader, r);
    }
  }

  // The target is a root, and so is a libdump.Root holding the description and
  // the target, so that readers show why the object is alive.
  void OtherRoot(const format::OtherRootRecord& r) {
    const Id obj = objects_->Resolve(r.ptr);
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
    const Id obj = objects_->Resolve(r.obj);
    if (obj == 0) return;
    writer_->RootUnknown(std_->WriteFinalizer(*writer_, *ids_, obj));
    ++stats_.roots;
    ++stats_.finalizers;
  }

  static void Be(uint8_t* out, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
  }

  void CollectCounts(const ObjectCounts& c) {
    stats_.objects = c.objects;
    stats_.instances = c.instances;
    stats_.object_arrays = c.object_arrays;
    stats_.primitive_arrays = c.primitive_arrays;
    stats_.truncated_arrays = c.truncated_arrays;
    stats_.roots += c.roots;
    stats_.unresolved_roots = c.unresolved_roots;
    stats_.alloc_stacks = c.alloc_stacks;
    auto& out = stats_.classes_by_type;
    for (const auto& [id, counts] : c.by_type) {
      const TypePlan& t = plan_.types.at(id).plan;
      const std::string prim = hp::PrimitiveArrayClassName(t.prim);
      const std::string names[3] = {t.name, "[L" + t.name + ";", prim};
      for (int s = 0; s < 3; ++s) {
        if (counts[s] != 0) out[{id, DisplayName(names[s])}] += counts[s];
      }
    }
    for (const auto& [key, n] : c.go_typed) {
      const TypePlan& t = plan_.go_types.at(key.second).plan;
      const std::string name = t.regular == Shape::kInstance    ? t.name
                               : t.regular == Shape::kWordArray ? "[L" + t.name + ";"
                                                                : hp::PrimitiveArrayClassName(t.prim);
      out[{key.first, DisplayName(name)}] += n;
    }
    for (const auto& [id, u] : c.untyped) {
      if (u.arrays != 0) out[{id, DisplayName("[L(untyped);")}] += u.arrays;
      if (u.bytes != 0) out[{id, DisplayName("[B")}] += u.bytes;
    }
  }

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
  bool compressed_ = false;
  bool serial_only_ = false;
  HeapPlan plan_;
  std::optional<GoTypes> go_;  // --binary
  std::vector<uint32_t> named_of_;  // the typing pass's class of each object by AddressIndex position (0: none)
  std::optional<hp::Writer> writer_;
  std::optional<hp::IdAllocator> ids_;
  std::optional<hp::StringTable> strings_;
  std::optional<hp::ClassTable> classes_;
  std::optional<hp::StandardClasses> std_;
  std::optional<ObjectWriter> objects_;  // this thread's
  std::unordered_set<std::string> used_names_;
  std::unordered_map<std::string, Id> module_classes_;
  Id unknown_module_ = 0;
  Id root_class_ = 0;
  std::vector<ThreadOut> threads_;
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
