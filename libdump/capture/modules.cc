#include "modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace libdump::capture {

namespace {

std::string Hex(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

// Finds NT_GNU_BUILD_ID in a PT_NOTE segment (notes are 4-byte aligned on Linux).
std::string BuildIdFromNotes(const uint8_t* p, size_t size) {
  size_t off = 0;
  while (off + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) h;
    std::memcpy(&h, p + off, sizeof h);
    const size_t name_at = off + sizeof h;
    const size_t desc_at = name_at + ((h.n_namesz + 3) & ~3u);
    const size_t next = desc_at + ((h.n_descsz + 3) & ~3u);
    if (next > size || next <= off) break;
    if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 && std::memcmp(p + name_at, "GNU", 4) == 0) {
      return Hex(p + desc_at, h.n_descsz);
    }
    off = next;
  }
  return {};
}

int Collect(struct dl_phdr_info* info, size_t, void* arg) {
  auto* out = static_cast<std::vector<Module>*>(arg);
  Module m;
  m.base = info->dlpi_addr;
  m.path = info->dlpi_name ? info->dlpi_name : "";
  if (m.path.empty() && out->empty()) {
    // The first entry is the main program, which the loader leaves unnamed.
    char exe[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) m.path.assign(exe, static_cast<size_t>(n));
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uint64_t start = m.base + ph.p_vaddr;
    switch (ph.p_type) {
      case PT_LOAD:
        m.segments.push_back({start, start + ph.p_memsz, ph.p_offset, (ph.p_flags & PF_X) != 0,
                              (ph.p_flags & PF_W) != 0});
        break;
      case PT_GNU_EH_FRAME:
        m.eh_frame_hdr = start;
        m.eh_frame_hdr_size = ph.p_memsz;
        break;
      case PT_GNU_RELRO:
        m.relro_start = start;
        m.relro_end = start + ph.p_memsz;
        break;
      case PT_NOTE:
        if (m.build_id.empty()) {
          m.build_id = BuildIdFromNotes(reinterpret_cast<const uint8_t*>(start), ph.p_memsz);
        }
        break;
    }
  }
  if (!m.segments.empty()) out->push_back(std::move(m));
  return 0;
}

}  // namespace

std::vector<Module> LoadedModules() {
  std::vector<Module> modules;
  dl_iterate_phdr(Collect, &modules);
  return modules;
}

const Module* FindModule(const std::vector<Module>& modules, uint64_t addr) {
  for (const Module& m : modules) {
    for (const Segment& s : m.segments) {
      if (addr >= s.start && addr < s.end) return &m;
    }
  }
  return nullptr;
}

}  // namespace libdump::capture
