// The C++ types, global variables, vtables and function locals of one ELF
// module, from its DWARF (elfutils libdw) and its symbol table, for the
// typing pass's DWARF rule (docs/TYPING.md, "DWARF (rule 2)").
//
// Opening a module walks each compilation unit once for the names of the
// type definitions, the global variables at fixed addresses, the functions'
// entry addresses and std::function's managers; a type's members, its
// template arguments and a function's locals are read from their DIEs when
// first asked for, so the cost follows what the dump reaches, not the size
// of the binary. Types are one per qualified name (the copies each
// compilation unit holds are one type); typedefs and cv-qualifiers are
// looked through.
//
// Every count read from the file is bounded (members, template arguments,
// nesting, DIEs walked), so a corrupt or hostile file ends in bounded work;
// what cannot be read is left out, never guessed.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace libdump::typing {

inline constexpr uint32_t kNoCxxType = UINT32_MAX;

// One line saying why a file gives no types ("not an ELF file", "has no
// DWARF debug information").
class DwarfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class CxxKind : uint8_t {
  kOther,    // void, functions, pointers to members, anything not followed
  kBase,     // int, double, char...
  kEnum,
  kPointer,  // T* and T&, T&&: elem (kNoCxxType: void*)
  kStruct,   // class, struct: members (base classes among them)
  kUnion,
  kArray,    // elem, count (0: unknown bound)
};

struct CxxMember {
  std::string name;
  uint64_t offset = 0;
  uint32_t type = kNoCxxType;
  bool base = false;  // a base class subobject
};

struct CxxType {
  std::string name;  // qualified, as DWARF spells it: "std::vector<int, std::allocator<int> >"
  uint64_t size = 0;
  CxxKind kind = CxxKind::kOther;
  uint32_t elem = kNoCxxType;
  uint64_t count = 0;
  bool complete = true;  // false: a declaration no definition was found for
  std::vector<CxxMember> members;                    // increasing offset
  std::vector<uint32_t> template_types;              // DW_TAG_template_type_param, in order
  std::vector<int64_t> template_values;              // DW_TAG_template_value_param (constants)
  std::vector<std::pair<std::string, int64_t>> enumerators;  // kEnum
};

struct CxxGlobal {
  std::string name;
  uint64_t addr = 0;  // link-time address (add the module's load bias)
  uint64_t size = 0;
  uint32_t type = kNoCxxType;
};

// A local or parameter in the stack frame at CFA + cfa_offset.
struct CxxLocal {
  std::string name;
  int64_t cfa_offset = 0;
  uint32_t type = kNoCxxType;
};


class CxxProgram {
 public:
  // Reads `debug_path` (an ELF file with .debug_info; it may be the module
  // itself). `symbols_path` (may be empty or equal) is searched too for the
  // symbol table when the debug file has none. Throws DwarfError.
  static std::unique_ptr<CxxProgram> Open(const std::string& debug_path, const std::string& symbols_path = "");
  ~CxxProgram();
  CxxProgram(const CxxProgram&) = delete;
  CxxProgram& operator=(const CxxProgram&) = delete;

  // The type, read on first use (the reference stays valid).
  const CxxType& type(uint32_t id);
  size_t type_count() const { return types_.size(); }
  // The definition with this (qualified) name, or kNoCxxType.
  uint32_t FindType(std::string_view name);
  // The type class `id` declares inside itself by this name (a nested
  // typedef, class or enum: abseil's btree_node<P>::slot_type), typedefs
  // looked through; kNoCxxType when it declares none.
  uint32_t NestedType(uint32_t id, std::string_view name);
  // The type the vtable address point `addr` (link-time) belongs to, from
  // the `_ZTV` symbols: the symbol + 16 (two words: offset to top, RTTI).
  uint32_t VtableType(uint64_t addr);
  // The class whose vtable symbol is at address point `addr`: its demangled
  // name, or "".
  std::string VtableClassName(uint64_t addr) const;

  // The global variable whose bytes hold `addr` (link-time), or nullptr.
  const CxxGlobal* GlobalAt(uint64_t addr) const;
  const std::vector<CxxGlobal>& globals() const { return globals_; }
  // The locals of the function whose entry is `entry` (link-time) that sit
  // at a fixed offset from the CFA while the pc is `pc` (location lists),
  // when the function's frame base is the CFA.
  std::vector<CxxLocal> LocalsAt(uint64_t entry, uint64_t pc);
  size_t function_count() const { return functions_.size(); }
  // The functor type a std::function manager at `pc` (link-time) handles
  // (_Function_handler<Sig, F>::_M_manager, _Base_manager<F>::_M_manager),
  // or kNoCxxType.
  uint32_t FunctorOfManager(uint64_t pc);

  // The link-time address of file offset `off` (PT_LOAD headers), and the
  // extent of the loadable segments; false when no segment maps it.
  bool VaddrOfOffset(uint64_t off, uint64_t* vaddr) const;
  bool InSegments(uint64_t vaddr) const;
  unsigned ptr_size() const { return ptr_; }
  // A pointer type to `t` made up by the reader (bucket arrays, deque maps).
  uint32_t PointerTo(uint32_t t);

  struct Impl;

 private:
  CxxProgram();
  uint32_t Load(uint64_t die);

  std::unique_ptr<Impl> impl_;
  unsigned ptr_ = 8;
  std::deque<CxxType> types_;
  std::vector<uint8_t> loaded_;
  std::vector<uint64_t> die_of_;  // type id -> DIE offset (UINT64_MAX: made up)
  std::unordered_map<uint64_t, uint32_t> id_of_die_;
  std::unordered_map<std::string, uint32_t> id_of_name_;  // normalized qualified name -> id
  std::unordered_map<uint32_t, uint32_t> pointer_to_;
  std::vector<CxxGlobal> globals_;
  std::unordered_map<uint64_t, uint64_t> functions_;  // entry -> DIE offset
  std::unordered_map<uint64_t, uint64_t> managers_;   // manager entry -> functor DIE offset
  std::unordered_map<uint64_t, std::string> vtables_;  // address point -> mangled class (after _ZTV)
  struct Segment {
    uint64_t offset, filesz, vaddr, memsz;
  };
  std::vector<Segment> segments_;

  friend struct Impl;
};

}  // namespace libdump::typing
