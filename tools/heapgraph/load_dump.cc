// libdump dumps (docs/FORMAT.md) into a HeapGraph: references are the pointer
// fields of typed objects and every aligned word of untyped or conservative
// ones that points into an object (interior pointers count, as in
// dumptohprof).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "edge_batch.h"
#include "libdump/format/reader.h"
#include "load.h"

namespace libdump::heapgraph {
namespace {

using format::Kind;

struct TypeData {
  format::TypeRecord type;
  format::TypeFieldsRecord fields;
  format::TypeInfoRecord info;
  bool has_type = false;
  bool has_fields = false;
};

std::string HexAddr(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

class DumpLoader {
 public:
  DumpLoader(const std::string& path, HeapGraph& g, const Progress& progress)
      : path_(path), g_(g), b_(g), progress_(progress) {}

  void Run() {
    g_.source = Source::kDump;
    g_.path = path_;
    Pass1();
    Pass2();
  }

 private:
  void Tick(const char* pass, const format::Reader& r) {
    if (progress_ && ++ticks_ % 65536 == 0) progress_(pass, r.offset());
  }

  uint32_t ClassFor(uint64_t type, bool array) {
    const uint64_t key = type << 1 | (array ? 1 : 0);
    auto [it, added] = class_of_.try_emplace(key, static_cast<uint32_t>(g_.classes.size()));
    if (added) {
      ClassInfo c;
      c.id = type;
      c.array_type = array ? 2 : 0;
      g_.classes.push_back(std::move(c));
      array_class_.push_back(array);
    }
    return it->second;
  }

  void Pass1() {
    const tools::InputFile fd = OpenInput(path_);
    format::Reader reader(fd.fd());
    go_ = reader.dialect() != format::Dialect::kLibdump;
    g_.go = go_;
    g_.format = std::string(format::DialectName(reader.dialect())) +
                (reader.compression() == format::Compression::kNone
                     ? ""
                     : std::string(" (") + format::CompressionName(reader.compression()) + ")");
    format::Record r;
    std::map<uint64_t, format::FrameRecord> frames;  // by sp
    std::vector<format::GoroutineRecord> goroutines;
    std::unordered_map<uint64_t, std::string> thread_names;
    while (reader.Next(r)) {
      Tick("objects", reader);
      switch (r.kind) {
        case Kind::kObject: {
          seen_object_ = true;
          const bool own = r.object.type != 0 && own_types_.contains(r.object.type);
          if (own) {
            ++g_.own_objects;
            g_.own_bytes += r.object.size;
            if (!g_.include_own) {
              own_ranges_.emplace_back(r.object.addr, r.object.size);
              break;
            }
          }
          const Index i = b_.AddObject(r.object.addr, ClassFor(r.object.type, r.object.kind == format::kObjArray),
                                       r.object.size, r.offset);
          if (own) own_objects_.push_back(i);
          break;
        }
        case Kind::kType: {
          TypeData& t = types_[r.type.addr];
          t.type = r.type;
          t.has_type = true;
          break;
        }
        case Kind::kTypeFields: {
          TypeData& t = types_[r.type_fields.type];
          t.fields = r.type_fields;
          t.has_fields = true;
          break;
        }
        case Kind::kTypeInfo:
          types_[r.type_info.type].info = r.type_info;
          // Decided as objects are read: the flag counts before the first
          // object, where libdump's writer puts it (docs/FORMAT.md). Pass 2
          // decides the same.
          if ((r.type_info.flags & format::kTypeOwn) && !seen_object_) own_types_.insert(r.type_info.type);
          break;
        case Kind::kParams:
          ptr_size_ = r.params.ptr_size == 4 ? 4 : 8;
          big_endian_ = r.params.big_endian != 0;
          break;
        case Kind::kStackRoot:
          pending_roots_.push_back({r.stack_root.ptr, 0, r.stack_root.frame, r.stack_root.addr});
          break;
        case Kind::kDataRoot:
          pending_roots_.push_back({r.data_root.ptr, 1, r.data_root.addr});
          break;
        case Kind::kOtherRoot:
          pending_roots_.push_back({r.other_root.ptr, 2, descriptions_.size()});
          descriptions_.push_back(r.other_root.description);
          break;
        case Kind::kFinalizer:
          pending_roots_.push_back({r.finalizer.obj, 3, 0});
          break;
        case Kind::kGoroutine:
          goroutines.push_back(r.goroutine);
          break;
        case Kind::kFrame:
          frames[r.frame.sp] = r.frame;
          pc_names_.emplace(r.frame.pc, r.frame.name);
          break;
        case Kind::kThreadInfo:
          thread_names[r.thread_info.goroutine] = r.thread_info.name;
          break;
        case Kind::kModule:
          modules_.push_back(r.module);
          break;
        case Kind::kAllocStack: {
          auto [it, added] = stack_index_.try_emplace(r.alloc_stack.pcs, static_cast<uint32_t>(stack_pcs_.size()));
          if (added) stack_pcs_.push_back(r.alloc_stack.pcs);
          alloc_.emplace_back(r.alloc_stack.obj, it->second);
          break;
        }
        default:
          break;
      }
    }
    end_ = r.offset;
    g_.id_size = ptr_size_;
    b_.FinishObjects();
    NameClasses();
    // Threads and the frame each stack root names.
    std::unordered_map<uint64_t, std::pair<uint32_t, std::string>> frame_of;  // sp -> thread, name
    for (const format::GoroutineRecord& gr : goroutines) {
      ThreadInfo t;
      t.id = gr.addr;
      auto nit = thread_names.find(gr.addr);
      t.name = nit != thread_names.end() ? nit->second : (go_ ? "goroutine " : "thread ") + std::to_string(gr.goid);
      static const char* kStatus[] = {"idle", "runnable", "running", "syscall", "waiting"};
      t.state = gr.status < 5 ? kStatus[gr.status] : "status " + std::to_string(gr.status);
      if (!gr.wait_reason.empty()) t.state += " (" + gr.wait_reason + ")";
      if (go_) t.object = g_.Find(gr.addr);  // the goroutine's runtime.g
      const uint32_t ti = static_cast<uint32_t>(g_.threads.size());
      for (uint64_t sp = gr.tos; sp != 0 && t.frames.size() <= frames.size();) {
        auto it = frames.find(sp);
        if (it == frames.end()) break;
        t.frames.push_back(it->second.name.empty() ? HexAddr(it->second.pc) : it->second.name);
        frame_of[sp] = {ti, t.frames.back()};
        sp = it->second.parent;
      }
      g_.threads.push_back(std::move(t));
    }
    g_.root_kinds = {"stack", "global", "other", "finalizer"};
    std::sort(own_ranges_.begin(), own_ranges_.end());
    for (const PendingRoot& p : pending_roots_) {
      const Index o = FindContaining(g_, p.ptr);
      if (o == kNone) {
        // A root of libdump's own memory, left out with it.
        if (!InOwnObject(p.ptr)) ++g_.dropped_roots;
        continue;
      }
      Root root;
      root.object = o;
      root.kind = p.kind;
      root.ptr = p.ptr;
      if (p.kind == 0) {
        root.slot = p.slot;
        root.frame_sp = p.extra;
      } else if (p.kind == 1) {
        root.slot = p.extra;
      }
      if (p.kind == 0) {
        // The frame, and the slot's offset from its sp (Go frames name no
        // locals: the offset is what there is).
        const std::string slot = p.slot >= p.extra ? " sp+" + HexAddr(p.slot - p.extra) : " slot " + HexAddr(p.slot);
        auto it = frame_of.find(p.extra);
        if (it != frame_of.end()) {
          root.thread = it->second.first;
          root.label = it->second.second + slot;
        } else {
          root.label = "frame sp " + HexAddr(p.extra) + slot;
        }
      } else if (p.kind == 1) {
        root.label = "slot " + HexAddr(p.extra);
      } else if (p.kind == 2) {
        root.label = descriptions_[p.extra];
      } else {
        g_.finalizable.push_back(o);
      }
      g_.roots.push_back(std::move(root));
    }
    // Shown, libdump's own objects are each a root: one class per
    // component, never a chain of what holds them.
    if (!own_objects_.empty()) {
      const uint32_t kind = static_cast<uint32_t>(g_.root_kinds.size());
      g_.root_kinds.push_back("libdump");
      for (const Index o : own_objects_) {
        Root root;
        root.object = o;
        root.kind = kind;
        root.label = g_.ClassName(o);
        g_.roots.push_back(std::move(root));
      }
    }
    for (const auto& [sp, f] : frames) {
      FrameInfo fi{f.sp, f.parent, f.entry, f.pc, f.name};
      auto it = frame_of.find(sp);
      if (it != frame_of.end()) fi.thread = it->second.first;
      g_.frames.push_back(std::move(fi));
    }
    for (const format::ModuleRecord& m : modules_) g_.modules.push_back({m.start, m.end, m.file_offset, m.path, m.build_id});
    g_.big_endian = big_endian_;
    // Allocation stacks: frame names by pc, else module+offset.
    for (const auto& pcs : stack_pcs_) {
      std::vector<std::string> names;
      for (uint64_t pc : pcs) names.push_back(PcName(pc));
      g_.stacks.push_back(std::move(names));
    }
    for (const auto& [obj, s] : alloc_) {
      const Index o = g_.Find(obj);
      if (o != kNone) g_.stack_of.emplace(o, s);
    }
  }

  bool InOwnObject(uint64_t ptr) const {
    auto it = std::upper_bound(own_ranges_.begin(), own_ranges_.end(), std::pair<uint64_t, uint64_t>{ptr, UINT64_MAX});
    return it != own_ranges_.begin() && ptr - std::prev(it)->first < std::prev(it)->second;
  }

  std::string PcName(uint64_t pc) const {
    auto it = pc_names_.find(pc);
    if (it != pc_names_.end() && !it->second.empty()) return it->second;
    for (const format::ModuleRecord& m : modules_) {
      if (pc >= m.start && pc < m.end) {
        const size_t slash = m.path.rfind('/');
        return m.path.substr(slash == std::string::npos ? 0 : slash + 1) + "+" + HexAddr(pc - m.start + m.file_offset);
      }
    }
    return HexAddr(pc);
  }

  void NameClasses() {
    std::unordered_map<std::string, int> uses;
    for (uint32_t c = 0; c < g_.classes.size(); ++c) {
      ClassInfo& ci = g_.classes[c];
      auto it = types_.find(ci.id);
      std::string name;
      if (ci.id == 0) {
        name = "(untyped)";
        ci.named_by = NamedBy::kNothing;
      } else if (it != types_.end() && it->second.has_type && !it->second.type.name.empty()) {
        name = it->second.type.name;
      } else {
        name = "type@" + HexAddr(ci.id);
      }
      if (array_class_[c]) name += "[]";
      ci.name = name;
      // A Go dump's types are layouts the runtime made up ("obj24[0,16]"),
      // not names: the typing pass may name their objects (--binary).
      if (go_) ci.named_by = NamedBy::kNothing;
      ci.own = own_types_.contains(ci.id);
      if (it == types_.end()) continue;
      const TypeData& t = it->second;
      ci.instance_size = static_cast<uint32_t>(std::min<uint64_t>(t.type.size, UINT32_MAX));
      if (t.has_fields) {
        for (const format::NamedField& f : t.fields.fields) {
          FieldInfo fi;
          fi.name = f.name;
          fi.offset = static_cast<uint32_t>(f.offset);
          fi.size = static_cast<uint32_t>(f.size);
          fi.is_ref = f.kind == format::kFieldPtr;
          ci.fields.push_back(std::move(fi));
        }
      } else {
        for (const format::Field& f : t.type.fields) {
          // The pointer word: an interface's second word.
          const uint64_t off = f.offset + (f.kind == format::kFieldPtr ? 0 : ptr_size_);
          FieldInfo fi;
          fi.name = "f" + std::to_string(off);
          fi.offset = static_cast<uint32_t>(off);
          fi.size = ptr_size_;
          fi.is_ref = true;
          ci.fields.push_back(std::move(fi));
        }
      }
    }
    // Types sharing a name get their id, so every class name is unique.
    for (const ClassInfo& c : g_.classes) ++uses[c.name];
    for (ClassInfo& c : g_.classes) {
      if (uses[c.name] > 1) c.name += "@" + HexAddr(c.id);
    }
  }

  uint64_t Word(const uint8_t* p) const {
    uint64_t v = 0;
    if (big_endian_) {
      for (uint32_t i = 0; i < ptr_size_; ++i) v = v << 8 | p[i];
    } else {
      for (uint32_t i = ptr_size_; i-- > 0;) v = v << 8 | p[i];
    }
    return v;
  }

  // Resolved by the batch, on other threads (edge_batch.h).
  void Ref(uint64_t word) {
    if (word != 0) edges_->Word(word);
  }

  // Pointer words of one element laid out as type t at p[0, n).
  void Layout(const TypeData* t, const uint8_t* p, size_t n) {
    for (const format::Field& f : t->type.fields) {
      uint64_t off = f.offset;
      if (f.kind == format::kFieldIface || f.kind == format::kFieldEface) off += ptr_size_;
      if (off + ptr_size_ <= n) Ref(Word(p + off));
    }
  }

  void Scan(const uint8_t* p, size_t n) {
    for (size_t off = 0; off + ptr_size_ <= n; off += ptr_size_) Ref(Word(p + off));
  }

  void Edges(const format::ObjectRecord& o, std::span<const uint8_t> data) {
    auto it = o.type == 0 ? types_.end() : types_.find(o.type);
    const TypeData* t = it == types_.end() ? nullptr : &it->second;
    const bool array = o.kind == format::kObjArray || (t && (t->info.flags & format::kTypeArray));
    if (!t || !t->has_type || (t->info.flags & format::kTypeConservative) || o.kind == format::kObjChan) {
      Scan(data.data(), data.size());
      return;
    }
    if (!array) {
      Layout(t, data.data(), data.size());
      return;
    }
    // Arrays: elements of the element type (typeinfo), else of the type itself.
    const TypeData* elem = t;
    uint64_t step = t->type.size;
    if (t->info.flags & format::kTypeArray) {
      step = t->info.elem_size;
      if (t->info.elem_type == 0) return;  // scalar elements
      auto e = types_.find(t->info.elem_type);
      if (e == types_.end() || !e->second.has_type || (e->second.info.flags & format::kTypeConservative)) {
        Scan(data.data(), data.size());
        return;
      }
      elem = &e->second;
    }
    if (step == 0) {
      Scan(data.data(), data.size());
      return;
    }
    for (uint64_t at = 0; at + step <= data.size(); at += step) Layout(elem, data.data() + at, step);
  }

  void Pass2() {
    const tools::InputFile fd = OpenInput(path_);
    format::Reader reader(fd.fd());
    format::Record r;
    Index i = 0;
    EdgeBatch edges(g_, b_, EdgeBatch::Match::kContaining);
    edges_ = &edges;
    while (reader.Next(r)) {
      Tick("references", reader);
      if (r.kind != Kind::kObject) continue;
      if (!g_.include_own && r.object.type != 0 && own_types_.contains(r.object.type)) continue;
      if (i >= g_.size() || g_.where[i] != r.offset)
        throw format::FormatError(r.offset, "object", "the file changed while it was read");
      edges.Begin(i);
      Edges(r.object, reader.Payload(size_t{1} << 32));
      ++i;
    }
    if (i != g_.size() || r.offset != end_) throw format::FormatError(r.offset, "eof", "the file changed while it was read");
    edges.Finish();
    edges_ = nullptr;
    b_.FinishEdges();
  }

  struct PendingRoot {
    uint64_t ptr;
    uint32_t kind;   // 0 stack, 1 data, 2 other, 3 finalizer
    uint64_t extra;  // frame sp, slot address, description index
    uint64_t slot = 0;  // stack roots: the slot's address
  };

  struct PcsHash {
    size_t operator()(const std::vector<uint64_t>& v) const {
      size_t h = v.size();
      for (uint64_t x : v) h = h * 1000003 ^ std::hash<uint64_t>()(x);
      return h;
    }
  };

  std::string path_;
  HeapGraph& g_;
  GraphBuilder b_;
  EdgeBatch* edges_ = nullptr;  // pass 2's
  const Progress& progress_;
  uint64_t ticks_ = 0;
  uint64_t end_ = 0;
  uint32_t ptr_size_ = 8;
  bool big_endian_ = false;
  bool go_ = false;  // a Go runtime's dump
  std::unordered_map<uint64_t, uint32_t> class_of_;
  std::vector<bool> array_class_;
  std::unordered_map<uint64_t, TypeData> types_;
  std::vector<PendingRoot> pending_roots_;
  bool seen_object_ = false;
  std::unordered_set<uint64_t> own_types_;  // types flagged kTypeOwn before the first object
  std::vector<std::pair<uint64_t, uint64_t>> own_ranges_;  // (addr, size) of own objects left out
  std::vector<Index> own_objects_;  // own objects kept (include_own)
  std::vector<std::string> descriptions_;
  std::unordered_map<uint64_t, std::string> pc_names_;
  std::vector<format::ModuleRecord> modules_;
  std::unordered_map<std::vector<uint64_t>, uint32_t, PcsHash> stack_index_;
  std::vector<std::vector<uint64_t>> stack_pcs_;
  std::vector<std::pair<uint64_t, uint32_t>> alloc_;
};

}  // namespace

void LoadDump(const std::string& path, HeapGraph& g, const Progress& progress) {
  DumpLoader(path, g, progress).Run();
}

}  // namespace libdump::heapgraph
