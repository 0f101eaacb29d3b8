#include "elf_file.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/capture/modules.h"

namespace libdump::procimage {
namespace {

constexpr uint64_t kPage = 4096;

ElfInfo Describe(Elf* elf) {
  ElfInfo info;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return info;
  info.is_elf = true;
  const void* id = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
  if (n > 0) info.build_id = capture::BuildIdHex(id, static_cast<size_t>(n));
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return info;
  // A real file has a few dozen; the bound keeps a hostile count cheap
  // (libelf has checked the table lies within the bytes).
  for (size_t i = 0; i < phnum && i < 4096; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
    info.loads.push_back({.offset = ph.p_offset, .filesz = ph.p_filesz, .vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
                          .readable = (ph.p_flags & PF_R) != 0, .writable = (ph.p_flags & PF_W) != 0,
                          .executable = (ph.p_flags & PF_X) != 0});
    if (!info.has_base && ph.p_offset / kPage == 0) {
      info.base_vaddr = ph.p_vaddr & ~(kPage - 1);
      info.has_base = true;
    }
  }
  return info;
}

}  // namespace

int OpenRegularFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

ElfInfo ReadElfFile(const std::string& path) {
  const int fd = OpenRegularFile(path);
  if (fd < 0) return {};
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  ElfInfo info = Describe(elf);
  if (elf != nullptr) elf_end(elf);
  ::close(fd);
  return info;
}

ElfInfo ReadElfBytes(const void* data, size_t n) {
  // libelf converts an image of the other byte order in place, which would
  // write to the caller's read-only bytes; x86-64's files are all 64-bit
  // little-endian, so the others are no module of ours anyway.
  const auto* b = static_cast<const unsigned char*>(data);
  if (n < EI_NIDENT || b[EI_MAG0] != ELFMAG0 || b[EI_MAG1] != ELFMAG1 || b[EI_MAG2] != ELFMAG2 ||
      b[EI_MAG3] != ELFMAG3 || b[EI_CLASS] != ELFCLASS64 || b[EI_DATA] != ELFDATA2LSB)
    return {};
  elf_version(EV_CURRENT);
  Elf* elf = elf_memory(static_cast<char*>(const_cast<void*>(data)), n);
  ElfInfo info = Describe(elf);
  if (elf != nullptr) elf_end(elf);
  return info;
}

}  // namespace libdump::procimage
