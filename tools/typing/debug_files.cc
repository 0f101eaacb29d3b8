#include "debug_files.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>

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

std::string Hex(const void* p, ssize_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  const auto* b = static_cast<const unsigned char*>(p);
  for (ssize_t i = 0; i < n && i < 64; ++i) {
    s += kDigits[b[i] >> 4];
    s += kDigits[b[i] & 15];
  }
  return s;
}

bool HasDwarf(const std::string& path) {
  Opened f(path);
  if (f.elf == nullptr) return false;
  Dwarf* dw = dwarf_begin_elf(f.elf, DWARF_C_READ, nullptr);
  if (dw == nullptr) return false;
  Dwarf_Off next = 0;
  size_t header = 0;
  const bool any = dwarf_nextcu(dw, 0, &next, &header, nullptr, nullptr, nullptr) == 0;
  dwarf_end(dw);
  return any;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

}  // namespace

std::string BuildIdOf(const std::string& path) {
  Opened f(path);
  if (f.elf == nullptr) return "";
  const void* id = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(f.elf, &id);
  return n > 0 ? Hex(id, n) : "";
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
