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

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "cxx_expand.h"
#include "cxx_types.h"
#include "debug_files.h"

namespace libdump::typing {
namespace {

constexpr int kMaxPasses = 64;

// An object's payload.
class SpanMemory : public MemoryReader {
 public:
  SpanMemory(uint64_t base, std::span<const uint8_t> data) : base_(base), data_(data) {}
  bool Read(uint64_t addr, void* out, size_t n) const override {
    if (addr < base_ || addr - base_ > data_.size() || data_.size() - (addr - base_) < n) return false;
    std::memcpy(out, data_.data() + (addr - base_), n);
    return true;
  }

 private:
  uint64_t base_;
  std::span<const uint8_t> data_;
};

// The words of a global or a local the dump has: its roots (the words that
// point into the heap); the rest of its bytes are not in the dump.
class RootMemory : public MemoryReader {
 public:
  void Add(uint64_t addr, uint64_t value) { words_.try_emplace(addr, value); }
  bool Read(uint64_t addr, void* out, size_t n) const override {
    auto it = words_.find(addr);
    if (it == words_.end() || n > 8) return false;
    std::memcpy(out, &it->second, n);
    return true;
  }

 private:
  std::map<uint64_t, uint64_t> words_;
};

struct Module {
  CxxProgram* program;
  uint64_t start, end, bias;
};

class DwarfTyper {
 public:
  explicit DwarfTyper(Context& ctx)
      : ctx_(ctx), g_(ctx.graph()), expander_([this](uint64_t pc) { return FunctorOf(pc); }) {}

  void Run() {
    if (g_.ids.size() == 0 || ctx_.ptr_size() != 8 || g_.big_endian) return;  // libstdc++ x86-64 layouts
    LoadModules();
    if (modules_.empty()) return;
    state_.assign(g_.size(), 0);
    typing_.assign(g_.size(), 0);
    budget_ = uint64_t{64} * g_.size() + (uint64_t{1} << 22);
    SeedGlobals();
    SeedLocals();
    SeedVtableObjects();
    for (int pass = 0; pass < kMaxPasses && !pending_.empty() && budget_ > 0; ++pass) {
      std::vector<Index> list;
      list.reserve(pending_.size());
      for (const auto& [i, r] : pending_) list.push_back(i);
      std::sort(list.begin(), list.end());
      // What the pending objects may reach (the graph's edges), kept as the
      // scan passes it: an object reached after the scan passed it is
      // expanded from this copy, not in the next pass (a chain allocated
      // backwards would otherwise take a pass per link).
      Cacheable(list);
      const size_t pending_n = list.size();
      list.insert(list.end(), cacheable_.begin(), cacheable_.end());
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      cache_.clear();
      auto visit = [&](Index i, std::span<const uint8_t> data) {
        if (auto it = pending_.find(i); it != pending_.end()) {
          const Reach r = it->second;
          pending_.erase(it);
          state_[i] = 2;
          Expand(r, SpanMemory(g_.ids[i], data));
          DrainCached();
        } else if (state_[i] == 0 && std::binary_search(cacheable_.begin(), cacheable_.end(), i)) {
          cache_.emplace(i, std::vector<uint8_t>(data.begin(), data.end()));
        }
      };
      // Few objects: read only them; many: the whole file, so that what
      // they reach further on is read in this pass too.
      if (list.size() * 8 < g_.size() && pending_n * 8 < g_.size()) {
        ctx_.Scan(list, visit);
      } else {
        ctx_.ScanAll(visit);
      }
      cache_.clear();
    }
  }

 private:
  static constexpr uint64_t kCacheBytes = uint64_t{64} << 20;
  static constexpr size_t kCacheObjects = size_t{1} << 20;

  // The objects not yet reached that the pending ones reach through the
  // graph, breadth first, as many as kCacheBytes and kCacheObjects hold.
  void Cacheable(const std::vector<Index>& from) {
    cacheable_.clear();
    std::vector<Index> queue(from.begin(), from.end());
    std::vector<Index> seen;
    uint64_t bytes = 0;
    for (size_t k = 0; k < queue.size() && cacheable_.size() < kCacheObjects; ++k) {
      for (Index j : g_.Out(queue[k])) {
        if (j >= g_.size() || state_[j] != 0 || mark_.count(j)) continue;
        if (bytes + g_.Size(j) > kCacheBytes) continue;
        mark_.insert(j);
        bytes += g_.Size(j);
        cacheable_.push_back(j);
        queue.push_back(j);
        if (cacheable_.size() >= kCacheObjects) break;
      }
    }
    mark_.clear();
    std::sort(cacheable_.begin(), cacheable_.end());
  }

  // Expands the pending objects whose payload the cache holds.
  void DrainCached() {
    while (!ready_.empty()) {
      const Index i = ready_.back();
      ready_.pop_back();
      auto it = pending_.find(i);
      auto c = cache_.find(i);
      if (it == pending_.end() || c == cache_.end()) continue;
      const Reach r = it->second;
      pending_.erase(it);
      state_[i] = 2;
      const std::vector<uint8_t> data = std::move(c->second);
      cache_.erase(c);
      Expand(r, SpanMemory(g_.ids[i], data));
    }
  }

  void LoadModules() {
    std::map<std::pair<std::string, std::string>, CxxProgram*> seen;
    for (const heapgraph::ModuleInfo& m : g_.modules) {
      CxxProgram* prog = nullptr;
      auto key = std::make_pair(m.path, m.build_id);
      if (auto it = seen.find(key); it != seen.end()) {
        prog = it->second;
      } else {
        seen[key] = nullptr;
        const DebugFile f = FindDebugFile(m.path, m.build_id, ctx_.options().binaries, ctx_.options().debug_dirs);
        if (f.debug.empty()) continue;
        try {
          programs_.push_back(CxxProgram::Open(f.debug, f.symbols));
          prog = seen[key] = programs_.back().get();
        } catch (const std::exception&) {
          continue;  // a corrupt or foreign file: this module stays untyped
        }
      }
      if (prog == nullptr) continue;
      uint64_t vaddr = 0;
      if (!prog->VaddrOfOffset(m.file_offset, &vaddr)) continue;
      modules_.push_back({prog, m.start, m.end, m.start - vaddr});
    }
  }

  // The module whose loadable segments hold runtime address a.
  const Module* ModuleOf(uint64_t a) const {
    for (const Module& m : modules_) {
      if (a >= m.start && a < m.end) return &m;
    }
    for (const Module& m : modules_) {
      if (m.program->InSegments(a - m.bias)) return &m;
    }
    return nullptr;
  }

  std::pair<CxxProgram*, uint32_t> FunctorOf(uint64_t pc) {
    const Module* m = ModuleOf(pc);
    if (m == nullptr) return {nullptr, kNoCxxType};
    return {m->program, m->program->FunctorOfManager(pc - m->bias)};
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
      const Module* m = ModuleOf(r.slot);
      if (m == nullptr) continue;
      const CxxGlobal* gl = m->program->GlobalAt(r.slot - m->bias);
      if (gl == nullptr || gl->type == kNoCxxType) continue;
      auto [it, fresh] = group_of.try_emplace({m->program, gl->addr}, groups.size());
      if (fresh) groups.push_back({m, gl, {}});
      groups[it->second].mem.Add(r.slot, r.ptr);
    }
    for (const Group& gr : groups) {
      Reach whole;
      whole.addr = gr.g->addr + gr.m->bias;
      whole.program = gr.m->program;
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
      const Module* m = ModuleOf(f->pc);
      if (m == nullptr) continue;
      auto [li, fresh] = locals_of.try_emplace(f->sp);
      // A caller's pc is a return address: pc - 1 is in the call.
      if (fresh) li->second = m->program->LocalsAt(f->entry - m->bias, f->pc - 1 - m->bias);
      const uint64_t cfa = f->parent;
      for (const CxxLocal& l : li->second) {
        const uint64_t at = cfa + static_cast<uint64_t>(l.cfa_offset);
        const uint64_t size = m->program->type(l.type).size;
        if (r.slot < at || r.slot - at >= std::max<uint64_t>(size, 1)) continue;
        auto [gi, added] = group_of.try_emplace({f->sp, l.cfa_offset}, groups.size());
        if (added) {
          Group gr;
          gr.whole.addr = at;
          gr.whole.program = m->program;
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
    if (const Module* m = ModuleOf(c.id); m != nullptr && c.id != 0) {
      const uint32_t t = m->program->VtableType(c.id - m->bias);
      if (t != kNoCxxType) return it->second = {m->program, t};
    }
    for (const Module& m : modules_) {
      const uint32_t t = m.program->FindType(c.name);
      if (t != kNoCxxType && m.program->type(t).kind == CxxKind::kStruct) return it->second = {m.program, t};
    }
    return it->second;
  }

  void SeedVtableObjects() {
    for (Index i = 0; i < g_.size(); ++i) {
      if (ctx_.RuleOf(i) != Rule::kDump || state_[i] != 0) continue;
      auto [p, t] = DumpClassType(g_.cls[i]);
      if (p == nullptr || p->type(t).size > g_.Size(i)) continue;
      Reach r;
      r.addr = g_.ids[i];
      r.program = p;
      r.type = t;
      typing_[i] = Intern(r);
      state_[i] = 1;
      pending_.emplace(i, r);
    }
  }

  uint32_t Intern(const Reach& r) {
    auto [it, fresh] = typing_ids_.try_emplace({r.program, uint64_t{r.type} << 8 | r.naming}, 0);
    if (fresh) {
      typings_.push_back(r);
      it->second = static_cast<uint32_t>(typings_.size());  // 0: none
    }
    return it->second;
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

  void Offer(const Reach& r) {
    const Index i = g_.Find(r.addr);
    if (i == kNone) return;  // inside an object (make_shared's object in its control block, a local buffer)
    const uint32_t key = Intern(r);
    if (typing_[i] != 0) {
      if (typing_[i] != key) ++conflicts_;
      return;
    }
    const uint64_t size = g_.Size(i);
    const uint64_t es = r.program->type(r.type).size;
    if (es == 0) return;
    uint64_t count = r.naming == Reach::kValue ? 1 : r.count;
    if (count == UINT64_MAX) count = size / es;  // a C string: the allocation's length
    if (count != 0 && (count > size / es || count * es > size)) return;  // does not fit: not this type
    if (count == 0 && r.naming == Reach::kValue) return;
    typing_[i] = key;
    if (ctx_.RuleOf(i) == Rule::kDump) {
      // The dump knows the dynamic type (a vtable): expand as its DWARF class.
      if (state_[i] == 0) {
        auto [p, t] = DumpClassType(g_.cls[i]);
        Reach dyn = r;
        if (p != nullptr) dyn.program = p, dyn.type = t, dyn.naming = Reach::kValue, dyn.count = 1;
        state_[i] = 1;
        pending_.emplace(i, dyn);
        if (cache_.count(i)) ready_.push_back(i);
      }
      return;
    }
    if (!ctx_.Name(i, ClassOf(key), Rule::kDwarf, r.naming == Reach::kValue ? 0 : std::max<uint64_t>(count, 1))) return;
    if (r.leaf || state_[i] != 0) return;
    state_[i] = 1;
    Reach w = r;
    w.count = count;
    pending_.emplace(i, w);
    if (cache_.count(i)) ready_.push_back(i);
  }

  void Expand(const Reach& what, const MemoryReader& mem) {
    out_.clear();
    expander_.Expand(what, mem, budget_, out_);
    const std::vector<Reach> found = std::move(out_);
    out_.clear();
    for (const Reach& r : found) Offer(r);
  }

  Context& ctx_;
  HeapGraph& g_;
  std::vector<std::unique_ptr<CxxProgram>> programs_;
  std::vector<Module> modules_;
  Expander expander_;
  std::vector<uint8_t> state_;     // 0 not reached, 1 to expand, 2 expanded
  std::vector<uint32_t> typing_;   // the first typing to reach each object (0: none)
  std::vector<Reach> typings_;
  std::map<std::pair<const CxxProgram*, uint64_t>, uint32_t> typing_ids_;
  std::unordered_map<uint32_t, uint32_t> class_of_;
  std::unordered_map<uint32_t, std::pair<CxxProgram*, uint32_t>> dump_class_;
  std::unordered_map<Index, Reach> pending_;
  std::vector<Reach> out_;
  std::vector<Index> cacheable_;  // sorted
  std::unordered_set<Index> mark_;
  std::unordered_map<Index, std::vector<uint8_t>> cache_;
  std::vector<Index> ready_;
  uint64_t budget_ = 0;
  uint64_t conflicts_ = 0;
};

}  // namespace

void ApplyDwarfRule(Context& ctx) { DwarfTyper(ctx).Run(); }

}  // namespace libdump::typing
