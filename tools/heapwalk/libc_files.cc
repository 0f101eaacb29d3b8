#include "libc_files.h"

#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "elf_file.h"

namespace libdump::heapwalk {
namespace {

// libc's file, or its debug file, open for libelf. Opened as procimage opens
// files a core names: never blocking, regular files only (a hostile core can
// name a FIFO).
class ElfFile {
 public:
  explicit ElfFile(const std::string& path) {
    fd_ = procimage::OpenRegularFile(path);
    if (fd_ < 0) return;
    elf_version(EV_CURRENT);
    elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    if (elf_ != nullptr && (elf_kind(elf_) != ELF_K_ELF || gelf_getclass(elf_) != ELFCLASS64)) {
      elf_end(elf_);
      elf_ = nullptr;
    }
  }
  ~ElfFile() {
    if (elf_) elf_end(elf_);
    if (fd_ >= 0) ::close(fd_);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  Elf* elf() const { return elf_; }

 private:
  int fd_ = -1;
  Elf* elf_ = nullptr;
};

// Section counts and entry counts come from the file: bounded so that a
// hostile file costs little.
constexpr size_t kMaxSections = 1 << 16, kMaxEntries = 1 << 22;

bool ReadSymbols(const ElfFile& f, LibcFiles* out) {
  Elf_Scn* scn = nullptr;
  bool any = false;
  for (size_t n = 0; f.elf() && (scn = elf_nextscn(f.elf(), scn)) != nullptr && n < kMaxSections; ++n) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    const size_t count = std::min<size_t>(sh.sh_size / sh.sh_entsize, kMaxEntries);
    for (size_t k = 0; k < count; ++k) {
      GElf_Sym s;
      if (gelf_getsym(data, static_cast<int>(k), &s) == nullptr) break;
      const char* name = elf_strptr(f.elf(), sh.sh_link, s.st_name);
      if (name == nullptr) continue;
      if (std::strcmp(name, "main_arena") == 0 && GELF_ST_TYPE(s.st_info) == STT_OBJECT) out->main_arena = s.st_value;
      if (std::strcmp(name, "mp_") == 0 && GELF_ST_TYPE(s.st_info) == STT_OBJECT) out->mp = s.st_value;
      if (std::strcmp(name, "tcache") == 0 && GELF_ST_TYPE(s.st_info) == STT_TLS) out->tcache_tls = s.st_value;
    }
    any = true;
  }
  return any && out->main_arena.has_value();
}

void ReadTlsSlots(const ElfFile& f, LibcFiles* out) {
  Elf_Scn* scn = nullptr;
  for (size_t n = 0; f.elf() && (scn = elf_nextscn(f.elf(), scn)) != nullptr && n < kMaxSections; ++n) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_RELA || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    const size_t count = std::min<size_t>(sh.sh_size / sh.sh_entsize, kMaxEntries);
    for (size_t k = 0; k < count; ++k) {
      GElf_Rela r;
      if (gelf_getrela(data, static_cast<int>(k), &r) == nullptr) break;
      // Symbol 0: a variable of libc's own block, its offset in the addend.
      if (GELF_R_TYPE(r.r_info) == R_X86_64_TPOFF64 && GELF_R_SYM(r.r_info) == 0 && r.r_addend >= 0) {
        out->tls_slots.push_back({r.r_offset, static_cast<uint64_t>(r.r_addend)});
      }
    }
  }
}

}  // namespace

LibcFiles ReadLibcFiles(const std::string& libc_path, const std::string& build_id,
                        const std::vector<std::string>& debug_dirs) {
  LibcFiles out;
  ElfFile libc(libc_path);
  const std::string libc_id = libc.elf() != nullptr ? procimage::ReadElfFile(libc_path).build_id : "";
  const bool libc_matches = libc.elf() != nullptr && (build_id.empty() || libc_id == build_id);
  if (libc_matches) {
    ReadTlsSlots(libc, &out);
    if (ReadSymbols(libc, &out)) {
      out.symbols_from = libc_path;
      return out;
    }
  }
  const std::string id = !build_id.empty() ? build_id : (libc_matches ? libc_id : "");
  if (id.size() < 3) return out;
  for (const std::string& dir : debug_dirs) {
    const std::string path = dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
    ElfFile debug(path);
    LibcFiles found;
    if (debug.elf() == nullptr || !ReadSymbols(debug, &found)) continue;
    out.symbols_from = path;
    out.main_arena = found.main_arena;
    out.mp = found.mp;
    out.tcache_tls = found.tcache_tls;
    return out;
  }
  return out;
}

}  // namespace libdump::heapwalk
