#include "platform/capture/modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "platform/capture/loader_fork.h"

namespace libdump::capture {

namespace {

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
      return BuildIdHex(p + desc_at, h.n_descsz);
    }
    off = next;
  }
  return {};
}

// What the loader says of one module, copied without allocating: the
// listing runs under the loader's lock.
struct RawModule {
  uint64_t base;
  char name[PATH_MAX];
  ElfW(Phdr) phdrs[32];
  int phnum;
  uint8_t notes[4][256];  // the first PT_NOTE segments' bytes, for the build id
  size_t notes_size[4];
  int nnotes;
};

struct Listing {
  RawModule* raw;
  size_t capacity;
  size_t count;  // may exceed capacity: then the listing is retried larger
};

int Count(struct dl_phdr_info*, size_t, void* arg) {
  ++*static_cast<size_t*>(arg);
  return 0;
}

int Copy(struct dl_phdr_info* info, size_t, void* arg) {
  auto* l = static_cast<Listing*>(arg);
  if (l->count++ >= l->capacity) return 0;
  RawModule& r = l->raw[l->count - 1];
  r.base = info->dlpi_addr;
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  std::strncpy(r.name, name, sizeof r.name - 1);
  r.name[sizeof r.name - 1] = '\0';
  r.phnum = 0;
  r.nnotes = 0;
  for (int i = 0; i < info->dlpi_phnum && r.phnum < 32; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    r.phdrs[r.phnum++] = ph;
    if (ph.p_type == PT_NOTE && r.nnotes < 4) {
      const size_t n = ph.p_memsz < sizeof r.notes[0] ? ph.p_memsz : sizeof r.notes[0];
      std::memcpy(r.notes[r.nnotes], reinterpret_cast<const void*>(info->dlpi_addr + ph.p_vaddr), n);
      r.notes_size[r.nnotes++] = n;
    }
  }
  return 0;
}

Module FromRaw(const RawModule& r, bool first) {
  Module m;
  m.base = r.base;
  m.path = r.name;
  if (m.path.empty() && first) {
    // The first entry is the main program, which the loader leaves unnamed.
    char exe[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) m.path.assign(exe, static_cast<size_t>(n));
  }
  for (int i = 0; i < r.phnum; ++i) {
    const ElfW(Phdr)& ph = r.phdrs[i];
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
    }
  }
  for (int i = 0; i < r.nnotes && m.build_id.empty(); ++i) m.build_id = BuildIdFromNotes(r.notes[i], r.notes_size[i]);
  return m;
}

}  // namespace

std::string BuildIdHex(const void* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* b = static_cast<const unsigned char*>(p);
  n = n < 64 ? n : 64;
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[b[i] >> 4];
    s += kDigits[b[i] & 15];
  }
  return s;
}

std::vector<Module> LoadedModules() {
  size_t n = 0;
  dl_iterate_phdr(Count, &n);
  std::vector<RawModule> raw;
  Listing l{nullptr, 0, 0};
  // Modules loaded between the count and the copy: a larger retry.
  for (size_t room = n + 16;; room *= 2) {
    raw.resize(room);
    l = {raw.data(), room, 0};
    dl_iterate_phdr(Copy, &l);
    if (l.count <= room) break;
  }
  std::vector<Module> modules;
  for (size_t i = 0; i < l.count; ++i) {
    Module m = FromRaw(raw[i], i == 0);
    if (!m.segments.empty()) modules.push_back(std::move(m));
  }
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
