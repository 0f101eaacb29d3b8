#include "module_files.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

namespace libdump::coretodump {

std::string FileBuildId(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  elf_version(EV_CURRENT);
  std::string out;
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    const void* id = nullptr;
    const ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
    static const char kHex[] = "0123456789abcdef";
    for (ssize_t i = 0; i < n; ++i) {
      const auto b = static_cast<const unsigned char*>(id)[i];
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
    elf_end(elf);
  }
  close(fd);
  return out;
}

ModuleFiles::ModuleFiles(const std::vector<std::string>& binaries) {
  for (const std::string& b : binaries) {
    const std::string id = FileBuildId(b);
    if (id.empty()) {
      problems_.push_back(b + ": no build-id (or not an ELF file), not matched to any module");
    } else {
      by_build_id_.emplace(id, b);
    }
  }
}

std::string ModuleFiles::FileFor(const procimage::ImageModule& m) const {
  if (!m.build_id.empty()) {
    auto it = by_build_id_.find(m.build_id);
    if (it != by_build_id_.end()) return it->second;
  }
  if (!m.file.empty()) return m.file;
  return m.file_matches ? m.path : std::string();
}

}  // namespace libdump::coretodump
