#include "dwarf_file.h"

#include <dwarf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace libdump::godwarf {

ElfDwarf& ElfDwarf::operator=(ElfDwarf&& o) noexcept {
  if (this != &o) {
    Close();
    fd_ = o.fd_, elf_ = o.elf_, dw_ = o.dw_;
    o.fd_ = -1, o.elf_ = nullptr, o.dw_ = nullptr;
  }
  return *this;
}

void ElfDwarf::Close() {
  if (dw_) dwarf_end(dw_);
  if (elf_) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1, elf_ = nullptr, dw_ = nullptr;
}

ElfDwarf ElfDwarf::Open(const std::string& path, bool need_dwarf) {
  ElfDwarf f;
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd_ < 0) throw LoadError("cannot open: " + std::string(std::strerror(errno)));
  elf_version(EV_CURRENT);
  f.elf_ = elf_begin(f.fd_, ELF_C_READ_MMAP, nullptr);
  if (f.elf_ == nullptr || elf_kind(f.elf_) != ELF_K_ELF) throw LoadError("not an ELF file");
  f.dw_ = dwarf_begin_elf(f.elf_, DWARF_C_READ, nullptr);
  if (f.dw_ == nullptr && need_dwarf) {
    throw LoadError("has no DWARF debug information (stripped?): " + std::string(dwarf_errmsg(-1)));
  }
  return f;
}

bool DieUdata(Dwarf_Die* die, unsigned at, uint64_t* out) {
  Dwarf_Attribute a;
  Dwarf_Word w;
  if (dwarf_attr(die, at, &a) == nullptr) return false;
  if (dwarf_formudata(&a, &w) == 0) return *out = w, true;
  Dwarf_Addr addr;
  if (dwarf_formaddr(&a, &addr) == 0) return *out = addr, true;
  return false;
}

std::string DieName(Dwarf_Die* die) {
  const char* n = dwarf_diename(die);
  return n ? n : "";
}

void ForEachSymbol(Elf* elf, const std::function<void(const char*, const GElf_Sym&)>& fn) {
  for (const Elf64_Word want : {SHT_SYMTAB, SHT_DYNSYM}) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != want || sh.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      const size_t n = std::min<size_t>(sh.sh_size / sh.sh_entsize, data->d_size / sh.sh_entsize);
      for (size_t i = 0; i < n; ++i) {
        GElf_Sym s;
        if (gelf_getsym(data, static_cast<int>(i), &s) == nullptr) break;
        const char* name = elf_strptr(elf, sh.sh_link, s.st_name);
        if (name != nullptr && *name != '\0') fn(name, s);
      }
    }
  }
}

bool FrameBaseIsCfa(Dwarf_Die* fn) {
  Dwarf_Attribute fb;
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  return dwarf_attr(fn, DW_AT_frame_base, &fb) != nullptr && dwarf_getlocation(&fb, &ops, &n) == 0 && n == 1 &&
         ops[0].atom == DW_OP_call_frame_cfa;
}

void ForEachLocal(Dwarf_Die* fn, uint64_t pc, const std::function<void(Dwarf_Die*)>& cb) {
  constexpr size_t kMaxBlocks = 64;  // nesting followed
  constexpr size_t kMaxDies = 1 << 20;  // children of one function looked at
  std::vector<Dwarf_Die> firsts;  // the first child of each scope still to walk
  Dwarf_Die c;
  if (dwarf_child(fn, &c) == 0) firsts.push_back(c);
  size_t seen = 0;
  while (!firsts.empty()) {
    Dwarf_Die d = firsts.back();
    firsts.pop_back();
    do {
      if (++seen > kMaxDies) return;
      const int tag = dwarf_tag(&d);
      if (tag == DW_TAG_variable || tag == DW_TAG_formal_parameter) {
        cb(&d);
      } else if (tag == DW_TAG_lexical_block && firsts.size() < kMaxBlocks &&
                 (pc == kAnyPc || dwarf_haspc(&d, pc) == 1) && dwarf_child(&d, &c) == 0) {
        firsts.push_back(c);
      }
    } while (dwarf_siblingof(&d, &d) == 0);
  }
}

}  // namespace libdump::godwarf
