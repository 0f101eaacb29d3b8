// What the process images need from an ELF file, read with libelf: its
// build-id and its PT_LOAD segments, from a file on disk or from the first
// bytes of a mapping the image holds (the core's copy of a file's headers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace libdump::procimage {

struct ElfLoad {
  uint64_t offset = 0, filesz = 0, vaddr = 0, memsz = 0;
  bool readable = false, writable = false, executable = false;
};

struct ElfInfo {
  bool is_elf = false;
  std::string build_id;  // lower-case hex, "" when the file has none
  std::vector<ElfLoad> loads;
  // The link-time address of the file's first byte: where the PT_LOAD that
  // maps offset 0 wants it, page-aligned. A mapping of offset 0 at address A
  // has load bias A less this.
  uint64_t base_vaddr = 0;
  bool has_base = false;
};

// The file at path; is_elf false when it cannot be opened, is not a regular
// file (a FIFO named by a hostile core would block) or is not ELF.
ElfInfo ReadElfFile(const std::string& path);
// The same from n bytes of the file's start: the program headers and notes
// that lie within them are read, nothing past n.
ElfInfo ReadElfBytes(const void* data, size_t n);

// An open regular file, for reads at offsets (the fallback for file mappings
// a core left out). Opened without blocking and refused unless regular.
int OpenRegularFile(const std::string& path);

}  // namespace libdump::procimage
