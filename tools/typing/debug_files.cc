#include "debug_files.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>

#include "platform/capture/modules.h"

namespace libdump::typing {
namespace {

struct Opened {
  int fd = -1;
  Elf* elf = nullptr;
  explicit Opened(const std::string& path) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf != nullptr && elf_kind(elf) != ELF_K_ELF) {
      elf_end(elf);
      elf = nullptr;
    }
  }
  ~Opened() {
    if (elf) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }
};

// Whether the file has a .debug_info section with contents: its section
// headers only (opening the DWARF would decompress it).
bool HasDwarf(const std::string& path) {
  Opened f(path);
  if (f.elf == nullptr) return false;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(f.elf, &shstrndx) != 0) return false;
  Elf_Scn* scn = nullptr;
  for (size_t n = 0; (scn = elf_nextscn(f.elf, scn)) != nullptr && n < 65536; ++n) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type == SHT_NOBITS || sh.sh_size == 0) continue;
    const char* name = elf_strptr(f.elf, shstrndx, sh.sh_name);
    if (name != nullptr && (std::strcmp(name, ".debug_info") == 0 || std::strcmp(name, ".zdebug_info") == 0)) return true;
  }
  return false;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

}  // namespace

std::string BuildIdOf(const std::string& path) {
  Opened f(path);
  if (f.elf == nullptr) return "";
  const void* id = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(f.elf, &id);
  return n > 0 ? capture::BuildIdHex(id, static_cast<size_t>(n)) : "";
}

std::vector<LoadSegment> LoadSegments(const std::string& path) {
  std::vector<LoadSegment> out;
  Opened f(path);
  size_t n = 0;
  if (f.elf == nullptr || elf_getphdrnum(f.elf, &n) != 0) return out;
  for (size_t i = 0; i < n && i < 4096; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(f.elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_LOAD) {
      out.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr, ph.p_memsz});
    }
  }
  return out;
}

DebugFile FindDebugFile(const std::string& path, const std::string& build_id, const std::vector<std::string>& binaries,
                        const std::vector<std::string>& debug_dirs, const std::string& system_dir) {
  DebugFile out;
  // The module itself, when it is the one that ran.
  if (!path.empty() && path[0] == '/' && Exists(path) && (build_id.empty() || BuildIdOf(path) == build_id)) {
    out.symbols = path;
  }
  for (const std::string& b : binaries) {
    if (build_id.empty() ? b != path : BuildIdOf(b) != build_id) continue;
    if (HasDwarf(b)) {
      out.debug = b;
      if (out.symbols.empty()) out.symbols = b;
      return out;
    }
    if (out.symbols.empty()) out.symbols = b;
  }
  if (!out.symbols.empty() && HasDwarf(out.symbols)) {
    out.debug = out.symbols;
    return out;
  }
  if (build_id.size() > 2) {
    const std::string rel = ".build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
    std::vector<std::string> dirs = debug_dirs;
    if (!system_dir.empty()) dirs.push_back(system_dir);
    for (const std::string& d : dirs) {
      for (const std::string& c : {d + "/" + rel, d + "/" + rel.substr(10)}) {
        if (Exists(c) && HasDwarf(c)) {
          out.debug = c;
          return out;
        }
      }
    }
  }
  out.why = "no DWARF for " + path + (build_id.empty() ? "" : " (build-id " + build_id + ")");
  return out;
}

}  // namespace libdump::typing
