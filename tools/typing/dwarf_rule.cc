// Rule 2 (DWARF): types reached from the roots and from the dump's vtable
// classes through typed pointers (docs/TYPING.md, "DWARF").
//
// Breadth first, in passes over the file (the payloads are read forward
// only, Context::Scan): the seeds are the globals holding data roots, the
// locals of their frames holding stack roots (live at the frame's pc by
// their location lists, DW_OP_fbreg from the CFA, which is the caller's sp),
// and every object the dump names by a vtable (expanded as its DWARF class,
// never renamed). Each object expanded in a pass names what its typed
// pointers reach (cxx_expand.h); an object later in the file is expanded in
// the same pass, an earlier one in the next. The first type to reach an
// object keeps it: a second, different type is counted as a conflict. At
// most kMaxPasses passes.
#include "dwarf_rule.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "cxx_expand.h"
#include "cxx_types.h"
#include "debug_files.h"
#include "dump_memory.h"

namespace libdump::typing {
namespace {

constexpr int kMaxPasses = 64;

// A module of the dump; its DWARF is opened when something needs it (a
// root in its data, a frame in its code, a vtable or a functor manager).
struct Module {
  DebugFile file;
  uint64_t start, end, bias;
  std::vector<LoadSegment> segments;  // link-time addresses
  CxxProgram* program = nullptr;
  bool tried = false;
  bool given = false;         // a --binary FILE: read whatever its roots hold
  uint64_t debug_size = 0;    // the debug file's size: what reading it costs
  uint64_t claimed = 0;       // heap bytes its roots reach first (ClaimByModule)
  bool roots_worth = false;   // its roots seed the walk (ClaimByModule)
};

class DwarfTyper {
 public:
  explicit DwarfTyper(Context& ctx)
      : ctx_(ctx), g_(ctx.graph()), expander_([this](uint64_t pc) { return FunctorOf(pc); }) {}

  void Run() {
    if (g_.ids.size() == 0 || ctx_.ptr_size() != 8 || g_.big_endian) return;  // libstdc++ x86-64 layouts
    LoadModules();
    if (std::none_of(modules_.begin(), modules_.end(), [](const Module& m) { return !m.file.debug.empty(); })) return;
    state_.assign(g_.size(), 0);
    typing_.assign(g_.size(), 0);
    has_extra_.assign(g_.size(), false);
    ClaimByModule();
    budget_ = uint64_t{64} * g_.size() + (uint64_t{1} << 22);
    cache_bytes_ = std::clamp<uint64_t>(kCacheBytesPerObject * g_.size(), kCacheBytesMin, kCacheBytesMax);
    SeedGlobals();
    SeedLocals();
    SeedVtableObjects();
    for (int pass = 0; pass < kMaxPasses && !pending_list_.empty() && budget_ > 0; ++pass) {
      std::vector<Index> list;
      if (pending_list_.size() > g_.size() / 32) {
        // Many: the pending objects in index order from their state, not a sort.
        pending_list_ = {};
        for (Index i = 0; i < g_.size(); ++i) {
          if (state_[i] & kPending) list.push_back(i);
        }
      } else {
        list.swap(pending_list_);
        std::sort(list.begin(), list.end());
        list.erase(std::unique(list.begin(), list.end()), list.end());
        std::erase_if(list, [&](Index i) { return !(state_[i] & kPending); });
      }
      // What the pending objects may reach (the graph's edges), kept as the
      // scan passes it: an object reached after the scan passed it is
      // expanded from this copy, not in the next pass (a chain allocated
      // backwards would otherwise take a pass per link).
      Cacheable(list);
      const size_t pending_n = list.size();
      list.insert(list.end(), cacheable_.begin(), cacheable_.end());  // both sorted
      std::inplace_merge(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(pending_n), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      auto visit = [&](Index i, std::span<const uint8_t> data) {
        if (state_[i] & kPending) {
          state_[i] = kDone;
          Expand(TakeWork(i), SpanMemory(g_.ids[i], data), i);
          DrainCached();
        } else if (state_[i] & kMarked) {
          const size_t k = std::lower_bound(cacheable_.begin(), cacheable_.end(), i) - cacheable_.begin();
          cached_[k] = {arena_.size(), data.size()};
          arena_.insert(arena_.end(), data.begin(), data.end());
        }
      };
      // Few objects: read only them; many: the whole file, so that what
      // they reach further on is read in this pass too.
      if (list.size() * 8 < g_.size() && pending_n * 8 < g_.size()) {
        ctx_.Scan(list, visit);
      } else {
        ctx_.ScanAll(visit);
      }
      for (Index j : cacheable_) state_[j] &= ~kMarked;
      cacheable_.clear();
      cached_.clear();
      arena_.clear();
      arena_.shrink_to_fit();
    }
  }

 private:
  // The payload copy of a pass: a few bytes per object of the dump (the
  // pass's share of the typing's memory budget), within these bounds. What
  // does not fit is expanded in a later pass.
  static constexpr uint64_t kCacheBytesPerObject = 8;
  static constexpr uint64_t kCacheBytesMin = uint64_t{4} << 20, kCacheBytesMax = uint64_t{64} << 20;
  static constexpr size_t kCacheObjects = size_t{1} << 20;
  // state_ bits
  static constexpr uint8_t kPending = 1, kDone = 2, kMarked = 4, kSeen = 8;

  // The objects not yet reached that the pending ones may reach through the
  // graph and that the scan will have passed by then (earlier in the file
  // than where their holder is expanded), breadth first, as many as
  // cache_bytes_ and kCacheObjects hold. An object later in the file is read
  // when the scan comes to it.
  void Cacheable(const std::vector<Index>& from) {
    cacheable_.clear();
    std::vector<std::pair<Index, Index>> queue;  // object, the scan's position when it is expanded
    for (Index i : from) queue.emplace_back(i, i);
    std::vector<Index> seen;
    uint64_t bytes = 0;
    // The search itself stays within the cache's budget: it stops when the
    // cache is full or its queue holds as many bytes as the cache.
    const size_t max_queue = std::max<size_t>(from.size(), cache_bytes_ / sizeof(queue[0]));
    for (size_t k = 0; k < queue.size() && cacheable_.size() < kCacheObjects && queue.size() < max_queue &&
                       bytes < cache_bytes_;
         ++k) {
      const auto [u, at] = queue[k];
      for (Index j : g_.Out(u)) {
        if (j >= g_.size() || state_[j] != 0) continue;
        state_[j] = kSeen;
        seen.push_back(j);
        if (g_.Out(j).empty()) continue;  // never read (Offer)
        if (j < at) {
          if (bytes + g_.Size(j) > cache_bytes_) continue;
          bytes += g_.Size(j);
          cacheable_.push_back(j);
        }
        queue.emplace_back(j, std::max(j, at));
      }
    }
    for (Index j : seen) state_[j] = 0;
    for (Index j : cacheable_) state_[j] = kMarked;
    std::sort(cacheable_.begin(), cacheable_.end());
    cached_.assign(cacheable_.size(), {UINT64_MAX, 0});
    arena_.reserve(bytes);
  }

  // Expands the pending objects whose payload the cache holds.
  void DrainCached() {
    while (!ready_.empty()) {
      const Index i = ready_.back();
      ready_.pop_back();
      if (!(state_[i] & kPending)) continue;
      auto it = std::lower_bound(cacheable_.begin(), cacheable_.end(), i);
      if (it == cacheable_.end() || *it != i) continue;
      const auto [off, len] = cached_[it - cacheable_.begin()];
      if (off == UINT64_MAX) continue;  // not read yet: the scan will come to it
      state_[i] = kDone;
      Expand(TakeWork(i), SpanMemory(g_.ids[i], std::span<const uint8_t>(arena_.data() + off, len)), i);
    }
  }

  // Marks object i to be expanded as `work`: its typing alone when that says
  // everything (one value of the type that named it), else the whole work.
  void Pend(Index i, const Reach& work) {
    const bool simple = work.naming == Reach::kValue && work.live_begin == 0 && work.live_end == UINT64_MAX &&
                        work.deque_elem == kNoCxxType && !work.leaf && work.parent_link == 0 && typing_[i] != 0 &&
                        typings_[typing_[i] - 1].program == work.program && typings_[typing_[i] - 1].type == work.type &&
                        typings_[typing_[i] - 1].naming == Reach::kValue;
    if (!simple) {
      extras_[i] = work;
      has_extra_[i] = true;
    }
    const bool marked = state_[i] & kMarked;
    state_[i] = kPending | (marked ? kMarked : 0);
    pending_list_.push_back(i);
    if (marked) ready_.push_back(i);
  }

  Reach TakeWork(Index i) {
    if (has_extra_[i]) {
      has_extra_[i] = false;
      auto it = extras_.find(i);
      Reach r = it->second;
      extras_.erase(it);
      return r;
    }
    Reach r = typings_[typing_[i] - 1];
    r.addr = g_.ids[i];
    r.count = 1;
    r.live_begin = 0, r.live_end = UINT64_MAX;
    r.deque_elem = kNoCxxType;
    r.leaf = false;
    return r;
  }

  void LoadModules() {
    std::map<std::pair<std::string, std::string>, bool> seen;
    for (const heapgraph::ModuleInfo& m : g_.modules) {
      if (!seen.try_emplace({m.path, m.build_id}, true).second) continue;
      Module mod;
      mod.file = FindDebugFile(m.path, m.build_id, ctx_.options().binaries, ctx_.options().debug_dirs);
      if (mod.file.debug.empty()) {
        // No DWARF: never opened, but its roots still claim what they reach
        // first (ClaimByModule), from its own program headers.
        mod.tried = true;
        if (!m.build_id.empty() && BuildIdOf(m.path) != m.build_id) continue;
        mod.segments = LoadSegments(m.path);
      } else {
        mod.segments = LoadSegments(mod.file.symbols.empty() ? mod.file.debug : mod.file.symbols);
      }
      bool found = false;
      for (const LoadSegment& s : mod.segments) {
        if (m.file_offset >= s.offset && m.file_offset - s.offset < std::max<uint64_t>(s.filesz, 1)) {
          mod.bias = m.start - (s.vaddr + (m.file_offset - s.offset));
          found = true;
          break;
        }
      }
      if (!found) continue;
      mod.start = m.start, mod.end = m.end;
      const auto& given = ctx_.options().binaries;
      mod.given = !mod.file.debug.empty() && std::find(given.begin(), given.end(), mod.file.debug) != given.end();
      struct stat st;
      if (!mod.file.debug.empty() && stat(mod.file.debug.c_str(), &st) == 0) mod.debug_size = static_cast<uint64_t>(st.st_size);
      modules_.push_back(std::move(mod));
    }
  }

  // The module of a data root (its slot) or a stack root (its frame's pc).
  Module* RootModule(const heapgraph::Root& r) {
    if (r.kind == 1 && r.slot != 0) return ModuleOf(r.slot);
    if (r.kind != 0 || r.slot == 0 || r.frame_sp == 0) return nullptr;
    auto f = std::lower_bound(g_.frames.begin(), g_.frames.end(), r.frame_sp,
                              [](const heapgraph::FrameInfo& a, uint64_t sp) { return a.sp < sp; });
    if (f == g_.frames.end() || f->sp != r.frame_sp || f->pc == 0) return nullptr;
    return ModuleOf(f->pc);
  }

  // Which modules' roots seed the walk. Reading a module's DWARF costs about
  // its debug file's size in time and memory (libc6-dbg's compressed
  // sections are inflated whole); its globals and locals name at most what
  // its roots reach. Each module, in the dump's order (the program first;
  // modules without DWARF claim too, and are never read),
  // claims the heap bytes its roots reach through objects the dump does not
  // name (what a vtable class holds is its own module's to name) and that no
  // module before claimed; its
  // roots seed the walk when that is at least 1/kClaimRatio of its debug
  // file, when the file is small (kSmallDebug: read in a few tens of
  // milliseconds) or when it is a --binary FILE. Objects a module so skipped would
  // have named (libc's stdio buffers, the preload's own tables) go to the
  // weaker rules; vtables and std::function managers still open any module.
  static constexpr uint64_t kClaimRatio = 64;
  static constexpr uint64_t kSmallDebug = uint64_t{2} << 20;
  void ClaimByModule() {
    std::vector<std::vector<Index>> seeds(modules_.size());
    for (const heapgraph::Root& r : g_.roots) {
      if (r.object >= g_.size()) continue;
      if (Module* m = RootModule(r)) seeds[m - modules_.data()].push_back(r.object);
    }
    std::vector<Index> queue;
    for (size_t k = 0; k < modules_.size(); ++k) {
      Module& m = modules_[k];
      queue.clear();
      auto claim = [&](Index o) {
        if (state_[o] != 0 || ctx_.RuleOf(o) == Rule::kDump) return;
        state_[o] = kSeen;
        queue.push_back(o);
      };
      for (Index o : seeds[k]) claim(o);
      for (size_t h = 0; h < queue.size(); ++h) {
        m.claimed += g_.Size(queue[h]);
        for (Index j : g_.Out(queue[h])) {
          if (j < g_.size()) claim(j);
        }
      }
      m.roots_worth = m.claimed > 0 && (m.given || m.debug_size <= kSmallDebug || m.claimed >= m.debug_size / kClaimRatio);
    }
    std::fill(state_.begin(), state_.end(), 0);
  }

  // The module's DWARF, opened on first use; nullptr when it cannot be read.
  CxxProgram* Program(Module* m) {
    if (m == nullptr) return nullptr;
    if (!m->tried) {
      m->tried = true;
      try {
        programs_.push_back(CxxProgram::Open(m->file.debug, m->file.symbols));
        m->program = programs_.back().get();
      } catch (const std::exception&) {
        // A corrupt or foreign file: this module stays untyped.
      }
    }
    return m->program;
  }

  // The module whose code or loadable segments hold runtime address a.
  Module* ModuleOf(uint64_t a) {
    for (Module& m : modules_) {
      if (a >= m.start && a < m.end) return &m;
    }
    for (Module& m : modules_) {
      for (const LoadSegment& s : m.segments) {
        if (a - m.bias >= s.vaddr && a - m.bias - s.vaddr < s.memsz) return &m;
      }
    }
    return nullptr;
  }

  std::pair<CxxProgram*, uint32_t> FunctorOf(uint64_t pc) {
    Module* m = ModuleOf(pc);
    CxxProgram* p = Program(m);
    if (p == nullptr) return {nullptr, kNoCxxType};
    return {p, p->FunctorOfManager(pc - m->bias)};
  }

  void SeedGlobals() {
    std::map<std::pair<const CxxProgram*, uint64_t>, size_t> group_of;
    struct Group {
      const Module* m;
      const CxxGlobal* g;
      RootMemory mem;
    };
    std::vector<Group> groups;
    for (heapgraph::Root& r : g_.roots) {
      if (r.kind != 1 || r.slot == 0) continue;
      Module* m = ModuleOf(r.slot);
      if (m == nullptr || !m->roots_worth) continue;
      CxxProgram* p = Program(m);
      if (p == nullptr) continue;
      const CxxGlobal* gl = p->GlobalAt(r.slot - m->bias);
      if (gl == nullptr || gl->type == kNoCxxType) continue;
      auto [it, fresh] = group_of.try_emplace({p, gl->addr}, groups.size());
      if (fresh) groups.push_back({m, gl, {}});
      groups[it->second].mem.Add(r.slot, r.ptr);
    }
    for (const Group& gr : groups) {
      Reach whole;
      whole.addr = gr.g->addr + gr.m->bias;
      whole.program = gr.m->program;  // opened above
      whole.type = gr.g->type;
      Expand(whole, gr.mem);
    }
  }

  void SeedLocals() {
    struct Group {
      Reach whole;
      RootMemory mem;
    };
    std::vector<Group> groups;
    std::map<std::pair<uint64_t, int64_t>, size_t> group_of;  // frame sp, local offset
    std::unordered_map<uint64_t, std::vector<CxxLocal>> locals_of;  // frame sp
    for (const heapgraph::Root& r : g_.roots) {
      if (r.kind != 0 || r.slot == 0 || r.frame_sp == 0) continue;
      auto f = std::lower_bound(g_.frames.begin(), g_.frames.end(), r.frame_sp,
                                [](const heapgraph::FrameInfo& a, uint64_t sp) { return a.sp < sp; });
      if (f == g_.frames.end() || f->sp != r.frame_sp || f->parent == 0 || f->pc == 0) continue;
      Module* m = ModuleOf(f->pc);
      if (m == nullptr || !m->roots_worth) continue;
      CxxProgram* p = Program(m);
      if (p == nullptr) continue;
      auto [li, fresh] = locals_of.try_emplace(f->sp);
      // A caller's pc is a return address: pc - 1 is in the call.
      if (fresh) li->second = p->LocalsAt(f->entry - m->bias, f->pc - 1 - m->bias);
      const uint64_t cfa = f->parent;
      for (const CxxLocal& l : li->second) {
        const uint64_t at = cfa + static_cast<uint64_t>(l.cfa_offset);
        const uint64_t size = p->type(l.type).size;
        if (r.slot < at || r.slot - at >= std::max<uint64_t>(size, 1)) continue;
        auto [gi, added] = group_of.try_emplace({f->sp, l.cfa_offset}, groups.size());
        if (added) {
          Group gr;
          gr.whole.addr = at;
          gr.whole.program = p;
          gr.whole.type = l.type;
          groups.push_back(std::move(gr));
        }
        groups[gi->second].mem.Add(r.slot, r.ptr);
        break;
      }
    }
    for (const Group& gr : groups) Expand(gr.whole, gr.mem);
  }

  // The DWARF class of a class the dump names: by its vtable (the class id
  // is the vtable's address point), else by its name.
  std::pair<CxxProgram*, uint32_t> DumpClassType(uint32_t cls) {
    auto [it, fresh] = dump_class_.try_emplace(cls, std::make_pair(nullptr, kNoCxxType));
    if (!fresh) return it->second;
    const heapgraph::ClassInfo& c = g_.classes[cls];
    if (c.named_by != Rule::kDump) return it->second;
    if (Module* m = ModuleOf(c.id); c.id != 0) {
      if (CxxProgram* p = Program(m)) {
        const uint32_t t = p->VtableType(c.id - m->bias);
        if (t != kNoCxxType) return it->second = {p, t};
      }
    }
    for (const auto& p : programs_) {  // by name, in the modules opened so far
      const uint32_t t = p->FindType(c.name);
      if (t != kNoCxxType && p->type(t).kind == CxxKind::kStruct) return it->second = {p.get(), t};
    }
    return it->second;
  }

  // The pointer members of a class the dump named by its vtable, at any
  // depth of nested structs and bases ("_impl_.items_.rep_"), as the class's
  // fields: the holder rule names what they hold by member, object pages
  // show them. Bounded in depth and count.
  static constexpr int kFieldDepth = 6;
  static constexpr size_t kMaxFields = 512;
  void PointerFields(CxxProgram& p, uint32_t type, uint64_t at, const std::string& path, int depth,
                     std::vector<heapgraph::FieldInfo>& out) {
    if (depth > kFieldDepth) return;
    const std::vector<CxxMember> members = p.type(type).members;  // a copy: type() may read more DIEs
    for (const CxxMember& m : members) {
      if (out.size() >= kMaxFields || m.type == kNoCxxType) continue;
      const uint64_t off = at + m.offset;
      if (off > UINT32_MAX) continue;
      const CxxType& mt = p.type(m.type);
      const std::string name = m.base ? path : path.empty() ? m.name : path + "." + m.name;
      if (mt.kind == CxxKind::kPointer && !m.base) {
        heapgraph::FieldInfo f;
        f.name = name;
        f.offset = static_cast<uint32_t>(off);
        f.size = 8, f.type = 2, f.is_ref = true;
        out.push_back(std::move(f));
      } else if (mt.kind == CxxKind::kStruct) {
        PointerFields(p, m.type, off, name, depth + 1, out);
      } else if (mt.kind == CxxKind::kUnion && mt.members.size() == 1) {  // always its one member (cxx_expand.cc)
        const CxxMember only = mt.members[0];
        if (only.type == kNoCxxType || p.type(only.type).kind != CxxKind::kStruct) continue;
        const std::string inner = name.empty() ? only.name : name + "." + only.name;
        PointerFields(p, only.type, off + only.offset, inner, depth + 1, out);
      }
    }
  }
  void NameDumpClassFields(uint32_t cls, CxxProgram& p, uint32_t t) {
    heapgraph::ClassInfo& ci = g_.classes[cls];
    if (!fielded_.insert(cls).second) return;
    for (const heapgraph::FieldInfo& f : ci.fields) {
      if (!UnnamedField(f)) return;  // the dump's own names stand
    }
    std::vector<heapgraph::FieldInfo> fields;
    PointerFields(p, t, 0, "", 0, fields);
    std::sort(fields.begin(), fields.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
    ci.fields = std::move(fields);
  }

  void SeedVtableObjects() {
    for (Index i = 0; i < g_.size(); ++i) {
      if (ctx_.RuleOf(i) != Rule::kDump || state_[i] != 0) continue;
      auto [p, t] = DumpClassType(g_.cls[i]);
      if (p == nullptr || p->type(t).size > g_.Size(i)) continue;
      NameDumpClassFields(g_.cls[i], *p, t);
      Reach r;
      r.addr = g_.ids[i];
      r.program = p;
      r.type = t;
      typing_[i] = Intern(r);
      Pend(i, r);
    }
  }

  uint32_t Intern(const Reach& r) {
    uint64_t prog = 0;
    while (prog < programs_.size() && programs_[prog].get() != r.program) ++prog;
    const uint64_t key = prog << 40 | uint64_t{r.type} << 8 | r.naming;
    if (key == last_key_) return last_id_;
    auto [it, fresh] = typing_ids_.try_emplace(key, 0);
    if (fresh) {
      Reach t;
      t.program = r.program;
      t.type = r.type;
      t.naming = r.naming;
      typings_.push_back(t);
      it->second = static_cast<uint32_t>(typings_.size());  // 0: none
    }
    last_key_ = key;
    return last_id_ = it->second;
  }

  // The class a typing names, made once, with its fields for object pages.
  uint32_t ClassOf(uint32_t typing) {
    auto [it, fresh] = class_of_.try_emplace(typing, 0);
    if (!fresh) return it->second;
    const Reach& r = typings_[typing - 1];
    const uint32_t c = ctx_.Class(ReachName(r), Rule::kDwarf);
    heapgraph::ClassInfo& ci = g_.classes[c];
    const CxxType& t = r.program->type(r.type);
    if (ci.named_by == Rule::kDwarf && ci.fields.empty() && r.naming == Reach::kValue && t.kind == CxxKind::kStruct) {
      ci.instance_size = static_cast<uint32_t>(std::min<uint64_t>(t.size, UINT32_MAX));
      for (const CxxMember& m : t.members) {
        if (m.base || m.type == kNoCxxType || m.offset > UINT32_MAX) continue;
        const CxxType& mt = r.program->type(m.type);
        heapgraph::FieldInfo f;
        f.name = m.name;
        f.offset = static_cast<uint32_t>(m.offset);
        if (mt.kind == CxxKind::kPointer) {
          f.size = 8, f.type = 2, f.is_ref = true;
        } else if (mt.kind == CxxKind::kBase || mt.kind == CxxKind::kEnum) {
          f.size = static_cast<uint32_t>(mt.size);
          const bool fl = mt.name == "float" || mt.name == "double";
          f.type = mt.name == "bool" ? 4 : mt.size == 1 ? 8 : mt.size == 2 ? 9 : mt.size == 4 ? (fl ? 6 : 10) : (fl ? 7 : 11);
          if (mt.size != 1 && mt.size != 2 && mt.size != 4 && mt.size != 8) continue;
        } else {
          continue;
        }
        ci.fields.push_back(std::move(f));
      }
    }
    return it->second = c;
  }

  // The object starting at `addr`: among the references of the object being
  // expanded when it has few (what its pointers reach is among them), else
  // by the search over all objects.
  Index FindReached(uint64_t addr) const {
    if (from_ != kNone) {
      const auto out = g_.Out(from_);
      if (out.size() <= 16) {
        for (Index j : out) {
          if (j < g_.size() && g_.ids[j] == addr) return j;
        }
      }
    }
    return g_.Find(addr);
  }

  // A struct whose last member is an array (`T elements[1]`, or a bound
  // far past any allocation) holding at least its first element in `size`.
  static bool FlexibleFits(CxxProgram& p, uint32_t type, uint64_t size) {
    const CxxType& t = p.type(type);
    if (t.kind != CxxKind::kStruct || t.members.empty()) return false;
    const CxxMember last = t.members.back();
    if (last.type == kNoCxxType || last.base) return false;
    const CxxType& a = p.type(last.type);
    if (a.kind != CxxKind::kArray || a.elem == kNoCxxType) return false;
    const uint64_t es = p.type(a.elem).size;
    return es > 0 && last.offset <= size && es <= size - last.offset;
  }

  void Offer(const Reach& r) {
    Index i = FindReached(r.addr);
    uint64_t skip = 0;  // the bytes of the allocation before r.addr
    if (i == kNone && r.ctrl != 0) {
      // A swiss table's slots: inside the allocation its control bytes start.
      i = heapgraph::FindContaining(g_, r.addr);
      if (i == kNone || g_.ids[i] != r.ctrl) return;
      skip = r.addr - r.ctrl;
    }
    if (i == kNone) return;  // inside an object (make_shared's object in its control block, a local buffer)
    const uint32_t key = Intern(r);
    if (typing_[i] != 0) {
      if (typing_[i] != key) ++conflicts_;
      return;
    }
    if (skip >= g_.Size(i)) return;
    const uint64_t size = g_.Size(i) - skip;
    const uint64_t es = r.program->type(r.type).size;
    if (es == 0) return;
    uint64_t count = r.naming == Reach::kValue ? 1 : r.count;
    if (count == UINT64_MAX) count = size / es;  // a C string: the allocation's length
    // Does not fit: not this type, unless a struct ending in an array the
    // allocation sizes (protobuf's `void* elements[...]` rep) fits up to it.
    if (count != 0 && (count > size / es || count * es > size) && !(count == 1 && FlexibleFits(*r.program, r.type, size)))
      return;
    if (count == 0 && r.naming == Reach::kValue) return;
    typing_[i] = key;
    if (ctx_.RuleOf(i) == Rule::kDump) {
      // The dump knows the dynamic type (a vtable): expand as its DWARF class.
      if (!(state_[i] & (kPending | kDone))) {
        auto [p, t] = DumpClassType(g_.cls[i]);
        Reach dyn = r;
        if (p != nullptr) dyn.program = p, dyn.type = t, dyn.naming = Reach::kValue, dyn.count = 1;
        dyn.leaf = false;
        Pend(i, dyn);
      }
      return;
    }
    if (r.parent_link != 0) {
      // Named when its payload is read and proves the link (Expand); one
      // whose payload is never read (it points nowhere) stays unnamed.
      if ((state_[i] & (kPending | kDone)) || g_.Out(i).empty()) {
        typing_[i] = 0;
        return;
      }
      Pend(i, r);
      return;
    }
    if (!ctx_.Name(i, ClassOf(key), Rule::kDwarf, r.naming == Reach::kValue ? 0 : std::max<uint64_t>(count, 1))) return;
    if (state_[i] & (kPending | kDone)) return;
    // An object that points into no object (a string's characters, an
    // array of numbers) reaches nothing: it is named, never read.
    if (r.leaf || g_.Out(i).empty()) {
      state_[i] = kDone | (state_[i] & kMarked);
      return;
    }
    Reach w = r;
    w.count = count;
    Pend(i, w);
  }

  // `from`: the object whose payload `mem` is (kNone: a global or a local).
  void Expand(const Reach& what, const MemoryReader& mem, Index from = kNone) {
    if (what.parent_link != 0) {
      uint64_t parent = 0;
      uint8_t index = 0;
      if (from == kNone || !mem.Word(g_.ids[from], &parent) || parent != what.parent_link ||
          !mem.Read(g_.ids[from] + 8, &index, 1) || index != what.parent_index) {
        if (from != kNone) typing_[from] = 0;  // not a child of that node: left to the other rules
        return;
      }
      if (!ctx_.Name(from, ClassOf(typing_[from]), Rule::kDwarf, 0)) return;
    }
    out_.clear();
    expander_.Expand(what, mem, budget_, out_);
    const std::vector<Reach> found = std::move(out_);
    out_.clear();
    from_ = from;
    for (const Reach& r : found) Offer(r);
    from_ = kNone;
  }

  Context& ctx_;
  HeapGraph& g_;
  std::vector<std::unique_ptr<CxxProgram>> programs_;
  std::vector<Module> modules_;
  Expander expander_;
  heapgraph::BigArray<uint8_t> state_;     // kPending, kDone, kMarked (cached this pass)
  heapgraph::BigArray<uint32_t> typing_;   // the first typing to reach each object (0: none)
  std::vector<Reach> typings_;
  std::unordered_map<uint64_t, uint32_t> typing_ids_;
  uint64_t last_key_ = UINT64_MAX;
  uint32_t last_id_ = 0;
  std::unordered_map<uint32_t, uint32_t> class_of_;
  std::unordered_map<uint32_t, std::pair<CxxProgram*, uint32_t>> dump_class_;
  std::unordered_set<uint32_t> fielded_;  // dump classes whose DWARF pointer members were made fields
  std::vector<Index> pending_list_;              // objects to expand (state_ kPending), in the order reached
  std::unordered_map<Index, Reach> extras_;      // their work when their typing alone does not say it
  std::vector<bool> has_extra_;                  // per object: in extras_ (a bit, not a lookup, for the rest)
  std::vector<Reach> out_;
  std::vector<Index> cacheable_;  // sorted; state_ kMarked during the pass
  std::vector<std::pair<uint64_t, uint64_t>> cached_;  // per cacheable_: its payload in arena_ (UINT64_MAX: not read)
  std::vector<uint8_t> arena_;
  std::vector<Index> ready_;  // pending objects whose payload may be in the cache
  uint64_t budget_ = 0;
  uint64_t cache_bytes_ = 0;
  Index from_ = kNone;  // the object Expand reads (FindReached)
  uint64_t conflicts_ = 0;
};

}  // namespace

void ApplyDwarfRule(Context& ctx) { DwarfTyper(ctx).Run(); }

}  // namespace libdump::typing
