#include "cxx_types.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "dwarf_file.h"
#include "type_name.h"

namespace libdump::typing {
namespace {

using godwarf::DieName;
using godwarf::DieUdata;

// Bounds on what one file may make the reader do.
constexpr size_t kMaxMembers = 1 << 16;        // members, enumerators, template arguments of one type
constexpr size_t kMaxNesting = 256;            // namespaces and classes inside each other
constexpr uint64_t kMaxDies = uint64_t{1} << 28;  // DIEs walked at open
constexpr int kMaxTypedefChain = 32;
constexpr int kMaxNameDepth = 8;               // pointer to pointer to ... spelled out

}  // namespace

struct CxxProgram::Impl {
  godwarf::ElfDwarf debug;
  godwarf::ElfDwarf symbols;  // the module itself when the DWARF is apart (may hold no DWARF)
  // Qualified-name scopes: each DIE offset's scope is the last event at or
  // before it (the walk visits DIEs in file order).
  std::vector<std::string> scopes{""};
  std::vector<std::pair<uint64_t, uint32_t>> scope_events;
  std::unordered_map<std::string, uint64_t> definitions;  // normalized qualified name -> DIE
  std::unordered_map<uint64_t, uint64_t> manager_decls;   // _M_manager declaration DIE -> functor DIE
  int name_depth = 0;

  const std::string& ScopeOf(uint64_t off) const {
    auto it = std::upper_bound(scope_events.begin(), scope_events.end(), std::make_pair(off, UINT32_MAX));
    if (it == scope_events.begin()) return scopes[0];
    return scopes[std::prev(it)->second];
  }
  std::string Qualified(Dwarf_Die* die) {
    const std::string n = DieName(die);
    if (n.empty()) return n;
    return ScopeOf(dwarf_dieoffset(die)) + n;
  }
};

CxxProgram::CxxProgram() : impl_(std::make_unique<Impl>()) {}
CxxProgram::~CxxProgram() = default;

namespace {

// A variable at a fixed address: DW_OP_addr alone.
bool StaticAddress(Dwarf_Die* die, uint64_t* out) {
  Dwarf_Attribute a;
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_attr(die, DW_AT_location, &a) == nullptr || dwarf_getlocation(&a, &ops, &n) != 0) return false;
  if (n != 1 || ops[0].atom != DW_OP_addr) return false;
  *out = ops[0].number;
  return true;
}

uint64_t RefOffset(Dwarf_Die* die, unsigned at, bool integrate) {
  Dwarf_Attribute a;
  Dwarf_Die t;
  Dwarf_Attribute* got = integrate ? dwarf_attr_integrate(die, at, &a) : dwarf_attr(die, at, &a);
  if (got == nullptr || dwarf_formref_die(&a, &t) == nullptr) return UINT64_MAX;
  return dwarf_dieoffset(&t);
}

bool IsFlag(Dwarf_Die* die, unsigned at) {
  Dwarf_Attribute a;
  bool v = false;
  return dwarf_attr(die, at, &a) != nullptr && dwarf_formflag(&a, &v) == 0 && v;
}

}  // namespace

std::unique_ptr<CxxProgram> CxxProgram::Open(const std::string& debug_path, const std::string& symbols_path) {
  std::unique_ptr<CxxProgram> p(new CxxProgram());
  Impl& im = *p->impl_;
  try {
    im.debug = godwarf::ElfDwarf::Open(debug_path, true);
  } catch (const godwarf::LoadError& e) {
    throw DwarfError(e.what());
  }
  if (!symbols_path.empty() && symbols_path != debug_path) {
    try {
      im.symbols = godwarf::ElfDwarf::Open(symbols_path, false);
    } catch (const godwarf::LoadError&) {
      // The symbols are a help; the DWARF is what counts.
    }
  }
  p->ptr_ = gelf_getclass(im.debug.elf()) == ELFCLASS32 ? 4 : 8;

  // Segments: the module's own headers when it is there (a separate debug
  // file keeps them too, with the same addresses).
  Elf* seg_elf = im.symbols.elf() ? im.symbols.elf() : im.debug.elf();
  size_t nph = 0;
  if (elf_getphdrnum(seg_elf, &nph) == 0) {
    for (size_t i = 0; i < nph && i < 4096; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(seg_elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_LOAD) {
        p->segments_.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr, ph.p_memsz});
      }
    }
  }

  // Vtables from the symbol tables (the debug file's, then the module's).
  for (Elf* elf : {im.debug.elf(), im.symbols.elf()}) {
    if (elf == nullptr) continue;
    godwarf::ForEachSymbol(elf, [&](const char* name, const GElf_Sym& s) {
      if (std::strncmp(name, "_ZTV", 4) == 0 && GELF_ST_TYPE(s.st_info) == STT_OBJECT && s.st_size >= 2 * p->ptr_) {
        p->vtables_.try_emplace(s.st_value + 2 * p->ptr_, name + 4);
      }
    });
  }

  // One walk of every compilation unit.
  Dwarf* dw = im.debug.dwarf();
  uint64_t dies = 0;
  Dwarf_Off off = 0, next = 0;
  size_t header = 0;
  struct Level {
    Dwarf_Die first;
    uint32_t scope;
    bool functions;  // a _Function_handler / _Base_manager class: note its manager
    uint64_t functor;
  };
  std::vector<Level> stack;
  std::vector<uint64_t> global_dies;
  while (dies < kMaxDies && dwarf_nextcu(dw, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu, d;
    if (dwarf_offdie(dw, off + header, &cu) != nullptr && dwarf_child(&cu, &d) == 0) {
      stack.push_back({d, 0, false, UINT64_MAX});
    }
    off = next;
    while (!stack.empty()) {
      Level lv = stack.back();
      stack.pop_back();
      Dwarf_Die e = lv.first;
      uint64_t prev = 0;
      do {
        if (++dies > kMaxDies) break;
        const uint64_t here = dwarf_dieoffset(&e);
        if (here <= prev) break;  // a sibling chain that goes back: corrupt
        prev = here;
        if (im.scope_events.empty() || im.scope_events.back().second != lv.scope) {
          if (im.scope_events.empty() || im.scope_events.back().first < here) {
            im.scope_events.emplace_back(here, lv.scope);
          } else {
            im.scope_events.back().second = lv.scope;
          }
        }
        const int tag = dwarf_tag(&e);
        switch (tag) {
          case DW_TAG_namespace: {
            std::string n = DieName(&e);
            if (n.empty()) n = "(anonymous namespace)";
            Dwarf_Die c;
            if (stack.size() < kMaxNesting && dwarf_child(&e, &c) == 0) {
              Dwarf_Die sib;
              if (dwarf_siblingof(&e, &sib) == 0 && dwarf_dieoffset(&sib) > here) {
                stack.push_back(lv);  // the rest of this level, after the namespace's children
                stack.back().first = sib;
              }
              im.scopes.push_back(im.scopes[lv.scope] + n + "::");
              stack.push_back({c, static_cast<uint32_t>(im.scopes.size() - 1), false, UINT64_MAX});
              goto next_level;
            }
            break;
          }
          case DW_TAG_structure_type:
          case DW_TAG_class_type:
          case DW_TAG_union_type:
          case DW_TAG_enumeration_type:
          case DW_TAG_base_type: {
            if (IsFlag(&e, DW_AT_declaration)) break;
            const std::string n = DieName(&e);
            if (n.empty()) break;
            const std::string q = im.scopes[lv.scope] + n;
            im.definitions.try_emplace(NormalizeTypeName(q), here);
            Dwarf_Die c;
            if ((tag == DW_TAG_structure_type || tag == DW_TAG_class_type) && stack.size() < kMaxNesting &&
                dwarf_child(&e, &c) == 0) {
              const bool fn = q.starts_with("std::_Function_handler<") ||
                              q.starts_with("std::_Function_base::_Base_manager<");
              Dwarf_Die sib;
              const bool has_sib = dwarf_siblingof(&e, &sib) == 0 && dwarf_dieoffset(&sib) > here;
              if (has_sib) {
                stack.push_back(lv);
                stack.back().first = sib;
              }
              uint64_t functor = UINT64_MAX;
              if (fn) {  // the functor's template parameter follows the members
                Dwarf_Die k = c;
                size_t n = 0;
                do {
                  if (dwarf_tag(&k) == DW_TAG_template_type_parameter && DieName(&k) == "_Functor") {
                    functor = RefOffset(&k, DW_AT_type, false);
                  }
                } while (++n < kMaxMembers && dwarf_siblingof(&k, &k) == 0);
              }
              im.scopes.push_back(q + "::");
              stack.push_back({c, static_cast<uint32_t>(im.scopes.size() - 1), fn, functor});
              goto next_level;
            }
            break;
          }
          case DW_TAG_variable: {
            uint64_t addr = 0;
            if (!StaticAddress(&e, &addr)) break;
            const uint64_t type = RefOffset(&e, DW_AT_type, true);
            if (type == UINT64_MAX) break;
            std::string name;
            Dwarf_Attribute a;
            Dwarf_Die spec;
            if (dwarf_attr(&e, DW_AT_specification, &a) != nullptr && dwarf_formref_die(&a, &spec) != nullptr) {
              name = im.Qualified(&spec);
            } else {
              name = im.scopes[lv.scope] + DieName(&e);
            }
            p->globals_.push_back({std::move(name), addr, 0, kNoCxxType});
            global_dies.push_back(type);  // resolved after the walk, when every definition is known
            break;
          }
          case DW_TAG_subprogram: {
            if (lv.functions && DieName(&e) == "_M_manager" && lv.functor != UINT64_MAX) {
              im.manager_decls.try_emplace(here, lv.functor);
            }
            Dwarf_Addr entry = 0;
            if (dwarf_lowpc(&e, &entry) != 0) break;
            p->functions_.try_emplace(entry, here);
            const uint64_t spec = RefOffset(&e, DW_AT_specification, true);
            if (spec != UINT64_MAX) {
              if (auto it = im.manager_decls.find(spec); it != im.manager_decls.end()) {
                p->managers_.try_emplace(entry, it->second);
              }
            }
            break;
          }
          default:
            break;
        }
      } while (dwarf_siblingof(&e, &e) == 0);
    next_level:;
    }
  }
  if (im.definitions.empty() && p->functions_.empty() && p->globals_.empty()) {
    throw DwarfError("its DWARF describes no C++ types, functions or variables");
  }
  // The globals' types, now that every definition's name is known.
  for (size_t i = 0; i < p->globals_.size(); ++i) {
    CxxGlobal& g = p->globals_[i];
    g.type = p->Load(global_dies[i]);
    g.size = g.type == kNoCxxType ? 0 : p->type(g.type).size;
    if (g.type != kNoCxxType && p->type(g.type).kind == CxxKind::kArray && g.size == 0) {
      const CxxType& t = p->type(g.type);
      if (t.elem != kNoCxxType) g.size = t.count * p->type(t.elem).size;
    }
  }
  std::stable_sort(p->globals_.begin(), p->globals_.end(),
                   [](const CxxGlobal& a, const CxxGlobal& b) { return a.addr < b.addr; });
  return p;
}

uint32_t CxxProgram::FindType(std::string_view name) {
  const std::string key = NormalizeTypeName(name);
  if (auto it = id_of_name_.find(key); it != id_of_name_.end()) return it->second;
  auto d = impl_->definitions.find(key);
  if (d == impl_->definitions.end()) return kNoCxxType;
  return Load(d->second);
}

// The id of the type a DIE describes: typedefs and qualifiers looked
// through, a declaration replaced by the definition of the same name, one
// id per qualified name.
uint32_t CxxProgram::Load(uint64_t off) {
  if (off == UINT64_MAX) return kNoCxxType;
  if (auto it = id_of_die_.find(off); it != id_of_die_.end()) return it->second;
  Dwarf* dw = impl_->debug.dwarf();
  Dwarf_Die die;
  if (dwarf_offdie(dw, off, &die) == nullptr) return kNoCxxType;
  uint64_t cur = off;
  for (int i = 0;; ++i) {
    const int tag = dwarf_tag(&die);
    if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
        tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type) {
      break;
    }
    const uint64_t next = RefOffset(&die, DW_AT_type, false);
    if (next == UINT64_MAX) {  // const void
      id_of_die_.emplace(off, kNoCxxType);
      return kNoCxxType;
    }
    if (i >= kMaxTypedefChain || dwarf_offdie(dw, next, &die) == nullptr) return kNoCxxType;
    cur = next;
  }
  const int tag = dwarf_tag(&die);
  const bool named_kind = tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type ||
                          tag == DW_TAG_enumeration_type || tag == DW_TAG_base_type;
  std::string key;
  if (named_kind) {
    const std::string q = impl_->Qualified(&die);
    if (!q.empty()) {
      key = NormalizeTypeName(q);
      if (auto it = id_of_name_.find(key); it != id_of_name_.end()) {
        id_of_die_.emplace(off, it->second);
        return it->second;
      }
      if (IsFlag(&die, DW_AT_declaration)) {
        if (auto d = impl_->definitions.find(key); d != impl_->definitions.end() && d->second != cur) {
          Dwarf_Die def;
          if (dwarf_offdie(dw, d->second, &def) != nullptr) cur = d->second;
        }
      }
    }
  }
  if (cur != off) {
    if (auto it = id_of_die_.find(cur); it != id_of_die_.end()) {
      id_of_die_.emplace(off, it->second);
      return it->second;
    }
  }
  const auto id = static_cast<uint32_t>(types_.size());
  types_.emplace_back();
  loaded_.push_back(0);
  die_of_.push_back(cur);
  id_of_die_.emplace(off, id);
  id_of_die_.emplace(cur, id);
  if (!key.empty()) id_of_name_.emplace(key, id);
  return id;
}

const CxxType& CxxProgram::type(uint32_t id) {
  CxxType& t = types_[id];
  if (loaded_[id]) return t;
  loaded_[id] = 1;
  if (die_of_[id] == UINT64_MAX) return t;
  Dwarf_Die die;
  if (dwarf_offdie(impl_->debug.dwarf(), die_of_[id], &die) == nullptr) return t;
  const int tag = dwarf_tag(&die);
  t.name = impl_->Qualified(&die);
  DieUdata(&die, DW_AT_byte_size, &t.size);
  t.complete = !IsFlag(&die, DW_AT_declaration);
  switch (tag) {
    case DW_TAG_base_type:
      t.kind = CxxKind::kBase;
      break;
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type: {
      t.kind = CxxKind::kPointer;
      t.size = ptr_;
      t.elem = Load(RefOffset(&die, DW_AT_type, false));
      if (impl_->name_depth < kMaxNameDepth) {
        ++impl_->name_depth;
        t.name = (t.elem == kNoCxxType ? std::string("void") : type(t.elem).name) + "*";
        --impl_->name_depth;
      } else {
        t.name = "?*";
      }
      break;
    }
    case DW_TAG_array_type: {
      t.kind = CxxKind::kArray;
      t.elem = Load(RefOffset(&die, DW_AT_type, false));
      Dwarf_Die sub;
      uint64_t total = 1;
      bool any = false;
      if (dwarf_child(&die, &sub) == 0) {
        size_t k = 0;
        do {
          if (dwarf_tag(&sub) != DW_TAG_subrange_type) continue;
          uint64_t n = 0;
          if (DieUdata(&sub, DW_AT_count, &n)) {
          } else if (DieUdata(&sub, DW_AT_upper_bound, &n) && n < UINT64_MAX) {
            ++n;
          } else {
            n = 0;
          }
          total = n == 0 || total > (uint64_t{1} << 40) / n ? 0 : total * n;
          any = true;
        } while (++k < 64 && dwarf_siblingof(&sub, &sub) == 0);
      }
      t.count = any ? total : 0;
      if (impl_->name_depth < kMaxNameDepth) {
        ++impl_->name_depth;
        t.name = (t.elem == kNoCxxType ? std::string("?") : type(t.elem).name) + "[" + std::to_string(t.count) + "]";
        --impl_->name_depth;
      }
      break;
    }
    case DW_TAG_enumeration_type: {
      t.kind = CxxKind::kEnum;
      Dwarf_Die c;
      if (dwarf_child(&die, &c) == 0) {
        do {
          if (dwarf_tag(&c) != DW_TAG_enumerator) continue;
          Dwarf_Attribute a;
          Dwarf_Sword v = 0;
          if (dwarf_attr(&c, DW_AT_const_value, &a) == nullptr || dwarf_formsdata(&a, &v) != 0) continue;
          t.enumerators.emplace_back(DieName(&c), v);
        } while (t.enumerators.size() < kMaxMembers && dwarf_siblingof(&c, &c) == 0);
      }
      break;
    }
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type: {
      t.kind = tag == DW_TAG_union_type ? CxxKind::kUnion : CxxKind::kStruct;
      Dwarf_Die c;
      size_t seen = 0;
      if (dwarf_child(&die, &c) == 0) {
        do {
          const int ct = dwarf_tag(&c);
          if (ct == DW_TAG_member || ct == DW_TAG_inheritance) {
            if (IsFlag(&c, DW_AT_declaration)) continue;  // a static member
            Dwarf_Attribute a;
            if (dwarf_attr(&c, DW_AT_bit_size, &a) != nullptr) continue;  // a bit field: never a pointer
            CxxMember m;
            m.name = DieName(&c);
            m.base = ct == DW_TAG_inheritance;
            if (t.kind == CxxKind::kStruct && !DieUdata(&c, DW_AT_data_member_location, &m.offset)) continue;
            m.type = Load(RefOffset(&c, DW_AT_type, false));
            t.members.push_back(std::move(m));
          } else if (ct == DW_TAG_template_type_parameter) {
            t.template_types.push_back(Load(RefOffset(&c, DW_AT_type, false)));
          } else if (ct == DW_TAG_template_value_parameter) {
            Dwarf_Attribute a;
            Dwarf_Sword v = 0;
            if (dwarf_attr(&c, DW_AT_const_value, &a) != nullptr && dwarf_formsdata(&a, &v) == 0) {
              t.template_values.push_back(v);
            } else {
              t.template_values.push_back(INT64_MIN);
            }
          }
        } while (++seen < kMaxMembers && dwarf_siblingof(&c, &c) == 0);
      }
      std::stable_sort(t.members.begin(), t.members.end(),
                       [](const CxxMember& a, const CxxMember& b) { return a.offset < b.offset; });
      break;
    }
    default:
      t.kind = CxxKind::kOther;
      break;
  }
  return t;
}

uint32_t CxxProgram::NestedType(uint32_t id, std::string_view name) {
  if (id >= die_of_.size() || die_of_[id] == UINT64_MAX) return kNoCxxType;
  Dwarf_Die die, c;
  if (dwarf_offdie(impl_->debug.dwarf(), die_of_[id], &die) == nullptr || dwarf_child(&die, &c) != 0) return kNoCxxType;
  size_t n = 0;
  do {
    const int tag = dwarf_tag(&c);
    if ((tag == DW_TAG_typedef || tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
         tag == DW_TAG_enumeration_type || tag == DW_TAG_union_type) &&
        DieName(&c) == name) {
      return Load(dwarf_dieoffset(&c));
    }
  } while (++n < kMaxMembers && dwarf_siblingof(&c, &c) == 0);
  return kNoCxxType;
}

uint32_t CxxProgram::PointerTo(uint32_t t) {
  auto [it, fresh] = pointer_to_.try_emplace(t, 0);
  if (!fresh) return it->second;
  const auto id = static_cast<uint32_t>(types_.size());
  CxxType p;
  p.kind = CxxKind::kPointer;
  p.size = ptr_;
  p.elem = t;
  p.name = (t == kNoCxxType ? std::string("void") : type(t).name) + "*";
  types_.push_back(std::move(p));
  loaded_.push_back(1);
  die_of_.push_back(UINT64_MAX);
  return it->second = id;
}

std::string CxxProgram::VtableClassName(uint64_t addr) const {
  auto it = vtables_.find(addr);
  if (it == vtables_.end()) return "";
  int status = 0;
  char* d = abi::__cxa_demangle(it->second.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : "";
  std::free(d);
  return out;
}

uint32_t CxxProgram::VtableType(uint64_t addr) {
  const std::string n = VtableClassName(addr);
  return n.empty() ? kNoCxxType : FindType(n);
}

const CxxGlobal* CxxProgram::GlobalAt(uint64_t addr) const {
  auto it = std::upper_bound(globals_.begin(), globals_.end(), addr,
                             [](uint64_t a, const CxxGlobal& g) { return a < g.addr; });
  if (it == globals_.begin()) return nullptr;
  --it;
  return addr - it->addr < std::max<uint64_t>(it->size, 1) ? &*it : nullptr;
}

std::vector<CxxLocal> CxxProgram::LocalsAt(uint64_t entry, uint64_t pc) {
  std::vector<CxxLocal> out;
  auto it = functions_.find(entry);
  if (it == functions_.end()) return out;
  Dwarf_Die fn;
  if (dwarf_offdie(impl_->debug.dwarf(), it->second, &fn) == nullptr || !godwarf::FrameBaseIsCfa(&fn)) return out;
  godwarf::ForEachLocal(&fn, pc, [&](Dwarf_Die* var) {
    Dwarf_Attribute loc;
    if (dwarf_attr(var, DW_AT_location, &loc) == nullptr) return;
    Dwarf_Op* expr = nullptr;
    size_t len = 0;
    if (dwarf_getlocation_addr(&loc, pc, &expr, &len, 1) != 1 || len != 1 || expr[0].atom != DW_OP_fbreg) return;
    const uint32_t t = Load(RefOffset(var, DW_AT_type, true));
    if (t == kNoCxxType) return;
    Dwarf_Attribute na;
    const char* n = dwarf_formstring(dwarf_attr_integrate(var, DW_AT_name, &na));
    out.push_back({n ? n : "", static_cast<int64_t>(expr[0].number), t});
  });
  return out;
}

uint32_t CxxProgram::FunctorOfManager(uint64_t pc) {
  auto it = managers_.find(pc);
  return it == managers_.end() ? kNoCxxType : Load(it->second);
}

bool CxxProgram::VaddrOfOffset(uint64_t off, uint64_t* vaddr) const {
  for (const Segment& s : segments_) {
    if (off >= s.offset && off - s.offset < std::max<uint64_t>(s.filesz, 1)) {
      *vaddr = s.vaddr + (off - s.offset);
      return true;
    }
  }
  return false;
}

bool CxxProgram::InSegments(uint64_t vaddr) const {
  for (const Segment& s : segments_) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.memsz) return true;
  }
  return false;
}

}  // namespace libdump::typing
