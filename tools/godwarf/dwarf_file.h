// What reading any program's DWARF with elfutils needs, whatever the
// language: an ELF file opened with its DWARF, attribute helpers, the symbol
// table, and a function's locals. dwarf_loader.cc (Go) and the typing pass's
// C++ reader (tools/typing/cxx_types.cc) build on it.
#pragma once

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <functional>
#include <string>

#include "dwarf_loader.h"

namespace libdump::godwarf {

// An open ELF file and, if it has some, its DWARF; closes both.
class ElfDwarf {
 public:
  ElfDwarf() = default;
  ElfDwarf(ElfDwarf&& o) noexcept { *this = std::move(o); }
  ElfDwarf& operator=(ElfDwarf&& o) noexcept;
  ~ElfDwarf() { Close(); }
  // Throws LoadError ("cannot open: ...", "not an ELF file", "has no DWARF
  // debug information ..." when need_dwarf).
  static ElfDwarf Open(const std::string& path, bool need_dwarf);
  Elf* elf() const { return elf_; }
  Dwarf* dwarf() const { return dw_; }

 private:
  void Close();
  int fd_ = -1;
  Elf* elf_ = nullptr;
  Dwarf* dw_ = nullptr;
};

// An unsigned constant or address attribute.
bool DieUdata(Dwarf_Die* die, unsigned at, uint64_t* out);
std::string DieName(Dwarf_Die* die);

// Every named symbol of the file's symbol tables (.symtab, then .dynsym).
void ForEachSymbol(Elf* elf, const std::function<void(const char* name, const GElf_Sym& sym)>& fn);

// Whether the function's frame base is the CFA (DW_OP_call_frame_cfa), so
// that DW_OP_fbreg offsets are from the CFA.
bool FrameBaseIsCfa(Dwarf_Die* fn);

// Every variable and parameter of a function, in its lexical blocks too
// (nesting bounded); with `pc` other than kAnyPc, only the blocks that hold it.
inline constexpr uint64_t kAnyPc = UINT64_MAX;
void ForEachLocal(Dwarf_Die* fn, uint64_t pc, const std::function<void(Dwarf_Die* var)>& cb);

}  // namespace libdump::godwarf
