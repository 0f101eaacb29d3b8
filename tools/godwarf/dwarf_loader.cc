#include "dwarf_loader.h"

#include "dwarf_file.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

namespace libdump::godwarf {
namespace {

// The Go linker's own attributes (cmd/internal/dwarf): reflect.Kind of a
// type, a slice's or channel's element, and the offset of the runtime's type
// descriptor from runtime.types.
constexpr unsigned kAtGoKind = 0x2900;
constexpr unsigned kAtGoElem = 0x2902;
constexpr unsigned kAtGoRuntimeType = 0x2904;
// reflect.Kind values the loader tells apart.
constexpr uint64_t kGoKindChan = 18, kGoKindFunc = 19, kGoKindInterface = 20, kGoKindMap = 21,
                   kGoKindSlice = 23, kGoKindString = 24;

bool Udata(Dwarf_Die* die, unsigned at, uint64_t* out) { return DieUdata(die, at, out); }
std::string Name(Dwarf_Die* die) { return DieName(die); }

// Types are loaded from a worklist, not by recursion: pointers make cycles
// (main.node -> *main.node -> main.node) and nesting comes from the file.
class TypeLoader {
 public:
  TypeLoader(Dwarf* dw, GoProgram& p, unsigned ptr) : dw_(dw), p_(p), ptr_(ptr) {}

  uint32_t Get(Dwarf_Off off) {
    auto [it, fresh] = done_.try_emplace(off, 0);
    if (fresh) {
      it->second = p_.Add({});
      pending_.emplace_back(off, it->second);
    }
    return it->second;
  }
  uint32_t Ref(Dwarf_Die* die, unsigned at) {
    Dwarf_Attribute a;
    Dwarf_Die t;
    if (dwarf_attr(die, at, &a) == nullptr || dwarf_formref_die(&a, &t) == nullptr) return kNoType;
    return Get(dwarf_dieoffset(&t));
  }
  void Run() {
    while (!pending_.empty()) {
      const auto [off, index] = pending_.back();
      pending_.pop_back();
      Dwarf_Die die;
      if (dwarf_offdie(dw_, off, &die) == nullptr) continue;
      GoType t = Fill(&die);
      p_.mutable_type(index) = std::move(t);
    }
  }

 private:
  GoType Fill(Dwarf_Die* die) {
    GoType t;
    t.name = Name(die);
    Udata(die, DW_AT_byte_size, &t.size);
    uint64_t go_kind = 0;
    Udata(die, kAtGoKind, &go_kind);
    switch (dwarf_tag(die)) {
      case DW_TAG_base_type: {
        uint64_t enc = 0;
        Udata(die, DW_AT_encoding, &enc);
        t.kind = enc == DW_ATE_boolean                                 ? GoKind::kBool
                 : enc == DW_ATE_signed || enc == DW_ATE_signed_char   ? GoKind::kInt
                 : enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char ? GoKind::kUint
                 : enc == DW_ATE_float                                 ? GoKind::kFloat
                 : enc == DW_ATE_complex_float                         ? GoKind::kComplex
                                                                       : GoKind::kOther;
        break;
      }
      case DW_TAG_pointer_type:
        t.kind = GoKind::kPointer;
        t.size = ptr_;
        t.elem = Ref(die, DW_AT_type);  // none: unsafe.Pointer
        break;
      case DW_TAG_subroutine_type:
        t.kind = GoKind::kFunc;
        t.size = ptr_;
        break;
      case DW_TAG_array_type: {
        t.kind = GoKind::kArray;
        t.elem = Ref(die, DW_AT_type);
        Dwarf_Die sub;
        if (dwarf_child(die, &sub) == 0 && dwarf_tag(&sub) == DW_TAG_subrange_type) {
          uint64_t n = 0;
          if (Udata(&sub, DW_AT_count, &n)) {
            t.count = n;
          } else if (Udata(&sub, DW_AT_upper_bound, &n)) {
            t.count = n + 1;
          }
        }
        break;
      }
      case DW_TAG_structure_type:
        t.kind = go_kind == kGoKindString ? GoKind::kString : go_kind == kGoKindSlice ? GoKind::kSlice : GoKind::kStruct;
        if (t.kind == GoKind::kSlice) t.elem = Ref(die, kAtGoElem);
        Members(die, t);
        break;
      case DW_TAG_typedef:
        Typedef(die, go_kind, t);
        break;
      default:
        t.kind = GoKind::kOther;
        break;
    }
    return t;
  }

  void Members(Dwarf_Die* die, GoType& t) {
    Dwarf_Die m;
    if (dwarf_child(die, &m) != 0) return;
    do {
      if (dwarf_tag(&m) != DW_TAG_member) continue;
      GoMember member;
      member.name = Name(&m);
      Udata(&m, DW_AT_data_member_location, &member.offset);
      member.type = Ref(&m, DW_AT_type);
      t.members.push_back(std::move(member));
    } while (dwarf_siblingof(&m, &m) == 0);
    std::stable_sort(t.members.begin(), t.members.end(),
                     [](const GoMember& a, const GoMember& b) { return a.offset < b.offset; });
  }

  // Go names interfaces, maps and channels with a typedef to the runtime's
  // representation: an iface or eface struct, a pointer to hash<K,V> or hchan.
  void Typedef(Dwarf_Die* die, uint64_t go_kind, GoType& t) {
    Dwarf_Attribute a;
    Dwarf_Die under;
    const bool has_under = dwarf_attr(die, DW_AT_type, &a) != nullptr && dwarf_formref_die(&a, &under) != nullptr;
    switch (go_kind) {
      case kGoKindInterface:
        t.kind = t.name == "interface {}" || (has_under && Name(&under) == "runtime.eface") ? GoKind::kEface
                                                                                          : GoKind::kIface;
        t.size = 2 * ptr_;
        return;
      case kGoKindMap:
      case kGoKindChan:
        t.kind = go_kind == kGoKindMap ? GoKind::kMap : GoKind::kChan;
        t.size = ptr_;
        if (has_under && dwarf_tag(&under) == DW_TAG_pointer_type) t.elem = Ref(&under, DW_AT_type);
        return;
      case kGoKindFunc:
        t.kind = GoKind::kFunc;
        t.size = ptr_;
        return;
      default:
        t.kind = GoKind::kTypedef;
        t.elem = has_under ? Get(dwarf_dieoffset(&under)) : kNoType;
        return;
    }
  }

  Dwarf* dw_;
  GoProgram& p_;
  unsigned ptr_;
  std::unordered_map<Dwarf_Off, uint32_t> done_;
  std::vector<std::pair<Dwarf_Off, uint32_t>> pending_;
};

// A variable at a fixed address: its location is DW_OP_addr alone. Go
// writes it as a block (DWARF 4's DW_FORM_block1), read here directly.
bool StaticAddress(Dwarf_Die* die, unsigned ptr, bool big, uint64_t* out) {
  Dwarf_Attribute a;
  Dwarf_Block b;
  if (dwarf_attr(die, DW_AT_location, &a) == nullptr || dwarf_formblock(&a, &b) != 0) return false;
  if (b.length != 1 + ptr || b.data[0] != DW_OP_addr) return false;
  uint64_t v = 0;
  for (unsigned i = 0; i < ptr; ++i) v = v << 8 | b.data[1 + (big ? i : ptr - 1 - i)];
  *out = v;
  return true;
}

// One local or parameter: each range of its location list where it sits
// at a fixed offset from the frame base alone (DW_OP_fbreg K); ranges in a
// register tell nothing about the stack.
void ReadLocal(Dwarf_Die* die, uint64_t entry, TypeLoader& loader, GoProgram& p) {
  Dwarf_Attribute loc;
  if (dwarf_attr(die, DW_AT_location, &loc) == nullptr) return;
  const uint32_t type = loader.Ref(die, DW_AT_type);
  if (type == kNoType) return;
  Dwarf_Addr base = 0, start = 0, end = 0;
  Dwarf_Op* expr = nullptr;
  size_t len = 0;
  for (ptrdiff_t off = 0; (off = dwarf_getlocations(&loc, off, &base, &start, &end, &expr, &len)) > 0;) {
    if (len == 1 && expr[0].atom == DW_OP_fbreg) {
      p.AddLocal(entry, start, end, static_cast<int64_t>(expr[0].number), type);
    }
  }
}

// The locals of a function whose frame base is the CFA (Go's), in its
// lexical blocks too.
void ReadLocals(Dwarf_Die* fn, TypeLoader& loader, GoProgram& p) {
  Dwarf_Addr entry = 0;
  if (dwarf_lowpc(fn, &entry) != 0 || !FrameBaseIsCfa(fn)) return;
  ForEachLocal(fn, kAnyPc, [&](Dwarf_Die* d) { ReadLocal(d, entry, loader, p); });
}

// runtime.types (the base of DW_AT_go_runtime_type) and every function's entry.
uint64_t ReadSymbols(Elf* elf, GoProgram& p) {
  uint64_t types_base = 0;
  ForEachSymbol(elf, [&](const char* name, const GElf_Sym& s) {
    if (GELF_ST_TYPE(s.st_info) == STT_FUNC) p.AddFunction(name, s.st_value);
    if (std::strcmp(name, "runtime.types") == 0) types_base = s.st_value;
  });
  return types_base;
}

}  // namespace

GoProgram LoadGoProgram(const std::string& path) {
  ElfDwarf file = ElfDwarf::Open(path, false);
  Elf* const elf = file.elf();
  const unsigned ptr = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
  GElf_Ehdr eh;
  const bool big = gelf_getehdr(elf, &eh) != nullptr && eh.e_ident[EI_DATA] == ELFDATA2MSB;
  if (file.dwarf() == nullptr) {
    throw LoadError("has no DWARF debug information (built with -ldflags=-w, or stripped?): " +
                    std::string(dwarf_errmsg(-1)));
  }
  Dwarf* const dw = file.dwarf();
  GoProgram p(ptr);
  const uint64_t types_base = ReadSymbols(elf, p);
  TypeLoader loader(dw, p, ptr);
  std::vector<std::pair<uint64_t, Dwarf_Off>> runtime_types;  // descriptor offset, DIE
  uint64_t go_types = 0;
  Dwarf_Off off = 0, next = 0;
  size_t header = 0;
  while (dwarf_nextcu(dw, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu, d;
    if (dwarf_offdie(dw, off + header, &cu) != nullptr && dwarf_child(&cu, &d) == 0) {
      do {
        const int tag = dwarf_tag(&d);
        if (tag == DW_TAG_variable) {
          uint64_t addr = 0;
          if (StaticAddress(&d, ptr, big, &addr)) {
            const uint32_t t = loader.Ref(&d, DW_AT_type);
            if (t != kNoType) p.AddGlobal({Name(&d), addr, t});
          }
          continue;
        }
        if (tag == DW_TAG_subprogram) {
          ReadLocals(&d, loader, p);
          continue;
        }
        uint64_t v = 0;
        if (Udata(&d, kAtGoKind, &v)) ++go_types;
        if (Udata(&d, kAtGoRuntimeType, &v) && v != 0) runtime_types.emplace_back(v, dwarf_dieoffset(&d));
      } while (dwarf_siblingof(&d, &d) == 0);
    }
    off = next;
  }
  if (go_types == 0) throw LoadError("its DWARF describes no Go types (not a Go program?)");
  for (const auto& [desc, die] : runtime_types) {
    const uint32_t t = loader.Get(die);
    if (types_base != 0) p.AddRuntimeType(types_base + desc, t);
  }
  loader.Run();
  p.Byte();
  p.Finish();
  return p;
}

}  // namespace libdump::godwarf
