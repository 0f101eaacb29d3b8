// Root names: a data root's slot lies in a writable segment of a module the
// dump names; that module's ELF object symbols (STT_OBJECT, .symtab, else
// .dynsym) say which global variable holds it. Symbols come from the first
// file that has them: a --binary whose build-id (or file name) matches, the
// module's separate debug file under --debug-dir or /usr/lib/debug/.build-id,
// the module's own path. A file whose build-id differs from the module's is
// never used.
#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "typing.h"

namespace libdump::typing {
namespace {

struct Symbol {
  uint64_t addr, size;  // link-time address
  std::string name;
};

struct Segment {
  uint64_t vaddr, memsz, offset, filesz;
};

struct ElfFile {
  std::vector<Segment> loads;
  std::vector<Symbol> symbols;  // object symbols by address
  std::string build_id;
  bool has_symtab = false;
};

std::string Demangle(const char* name) {
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, decltype(&free)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), &free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

std::string Hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Reads what naming needs of one ELF file; false when it is not one.
bool ReadElf(const std::string& path, ElfFile& out, bool symbols = true) {
  // O_NONBLOCK: a dump may name a FIFO; only regular files are read.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 64) {
    close(fd);
    return false;
  }
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  bool ok = elf != nullptr && elf_kind(elf) == ELF_K_ELF;
  if (ok) {
    size_t n = 0;
    if (elf_getphdrnum(elf, &n) == 0) {
      for (size_t k = 0; k < n && k < 4096; ++k) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, static_cast<int>(k), &ph) == nullptr) break;
        if (ph.p_type == PT_LOAD) out.loads.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz});
        if (ph.p_type == PT_NOTE && out.build_id.empty()) {
          // Read below from the section; program headers of debug files may not map notes.
        }
      }
    }
    std::vector<Symbol> dyn;
    Elf_Scn* scn = nullptr;
    size_t sections = 0;
    while ((scn = elf_nextscn(elf, scn)) != nullptr && ++sections < 65536) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) continue;
      if (sh.sh_type == SHT_NOTE && out.build_id.empty()) {
        Elf_Data* data = elf_getdata(scn, nullptr);
        size_t off = 0, name_off, desc_off;
        GElf_Nhdr nh;
        while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
          if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && desc_off + nh.n_descsz <= data->d_size &&
              memcmp(static_cast<const char*>(data->d_buf) + name_off, "GNU", 4) == 0) {
            const auto* d = static_cast<const uint8_t*>(data->d_buf) + desc_off;
            for (size_t k = 0; k < nh.n_descsz; ++k) {
              char b[3];
              snprintf(b, sizeof b, "%02x", d[k]);
              out.build_id += b;
            }
            break;
          }
        }
        continue;
      }
      if (!symbols || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || sh.sh_entsize == 0) continue;
      if (sh.sh_type == SHT_DYNSYM && out.has_symtab) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      std::vector<Symbol>& into = sh.sh_type == SHT_SYMTAB ? out.symbols : dyn;
      if (sh.sh_type == SHT_SYMTAB) out.has_symtab = true;
      const size_t count = std::min<size_t>(data->d_size / sh.sh_entsize, size_t{1} << 24);
      for (size_t k = 0; k < count; ++k) {
        GElf_Sym s;
        if (gelf_getsym(data, static_cast<int>(k), &s) == nullptr) break;
        if (GELF_ST_TYPE(s.st_info) != STT_OBJECT || s.st_size == 0 || s.st_shndx == SHN_UNDEF) continue;
        const char* name = elf_strptr(elf, sh.sh_link, s.st_name);
        if (name == nullptr || name[0] == '\0') continue;
        into.push_back({s.st_value, s.st_size, name});
      }
    }
    if (!out.has_symtab) out.symbols = std::move(dyn);
    std::sort(out.symbols.begin(), out.symbols.end(), [](const Symbol& a, const Symbol& b) {
      return a.addr != b.addr ? a.addr < b.addr : a.name < b.name;
    });
  }
  if (elf) elf_end(elf);
  close(fd);
  return ok;
}

std::string BaseName(const std::string& p) {
  const size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

struct Module {
  const heapgraph::ModuleInfo* info;
  ElfFile elf;     // segments from the module's own file (or the symbol file)
  uint64_t bias = 0;
  bool usable = false;
};

// The load bias of a module whose file has these segments: the module record
// maps file_offset at start. False when no segment holds file_offset.
bool Bias(const heapgraph::ModuleInfo& mi, const std::vector<Segment>& loads, uint64_t* bias) {
  for (const Segment& s : loads) {
    if (mi.file_offset >= s.offset && mi.file_offset < s.offset + std::max<uint64_t>(s.filesz, 1)) {
      *bias = mi.start - (s.vaddr + (mi.file_offset - s.offset));
      return true;
    }
  }
  return false;
}

// Whether one of the (sorted) slots lies in a segment of the module.
bool HoldsAny(const std::vector<Segment>& loads, uint64_t bias, const std::vector<uint64_t>& slots) {
  for (const Segment& s : loads) {
    auto it = std::lower_bound(slots.begin(), slots.end(), s.vaddr + bias);
    if (it != slots.end() && *it - (s.vaddr + bias) < s.memsz) return true;
  }
  return false;
}

// Symbols for module m: the first candidate file that has a .symtab and the
// same build-id, else whatever the module's own file has.
void LoadModule(const Options& o, Module& m) {
  const heapgraph::ModuleInfo& mi = *m.info;
  std::vector<std::string> candidates;
  for (const std::string& b : o.binaries) candidates.push_back(b);
  if (mi.build_id.size() > 2) {
    const std::string rel = "/.build-id/" + mi.build_id.substr(0, 2) + "/" + mi.build_id.substr(2) + ".debug";
    for (const std::string& d : o.debug_dirs) candidates.push_back(d + rel);
    candidates.push_back("/usr/lib/debug" + rel);
  }
  candidates.push_back(mi.path);
  for (const std::string& c : candidates) {
    ElfFile f;
    if (!ReadElf(c, f)) continue;
    const bool same = !mi.build_id.empty() && f.build_id == mi.build_id;
    const bool differs = !mi.build_id.empty() && !f.build_id.empty() && f.build_id != mi.build_id;
    if (differs) continue;
    // A --binary without build-ids on either side must at least share the file name.
    if (!same && c != mi.path && BaseName(c) != BaseName(mi.path) && !c.ends_with(".debug")) continue;
    if (!m.usable || (f.has_symtab && !m.elf.has_symtab)) {
      if (f.loads.empty() && m.usable) {
        f.loads = m.elf.loads;
      }
      m.elf = std::move(f);
      m.usable = true;
    }
    if (m.elf.has_symtab) break;
  }
  if (!m.usable) return;
  m.usable = Bias(mi, m.elf.loads, &m.bias);
}

}  // namespace

uint64_t NameRoots(Context& ctx) {
  HeapGraph& g = ctx.graph();
  std::vector<uint32_t> data_roots;
  for (uint32_t r = 0; r < g.roots.size(); ++r) {
    if (g.roots[r].kind == 1 && g.roots[r].slot != 0) data_roots.push_back(r);
  }
  if (data_roots.empty() || g.modules.empty()) return 0;
  std::vector<uint64_t> slots;
  for (uint32_t r : data_roots) slots.push_back(g.roots[r].slot);
  std::sort(slots.begin(), slots.end());
  // Modules with the same file once each (a module has several records, one per mapping).
  std::vector<Module> modules;
  for (const heapgraph::ModuleInfo& mi : g.modules) {
    if (modules.size() >= 4096) break;
    if (mi.path.empty() || mi.path[0] == '[' || mi.path.starts_with("linux-vdso")) continue;
    bool seen = false;
    for (const Module& m : modules) seen |= m.info->path == mi.path;
    if (seen) continue;
    // Symbols only of modules whose data holds a root (a program maps dozens).
    ElfFile own;
    uint64_t bias = 0;
    if (ReadElf(mi.path, own, false) && Bias(mi, own.loads, &bias) && !HoldsAny(own.loads, bias, slots)) continue;
    Module m{&mi, {}, 0, false};
    LoadModule(ctx.options(), m);
    if (m.usable) modules.push_back(std::move(m));
  }
  uint64_t named = 0;
  for (uint32_t r : data_roots) {
    heapgraph::Root& root = g.roots[r];
    for (const Module& m : modules) {
      const uint64_t link = root.slot - m.bias;
      bool inside = false;
      for (const Segment& s : m.elf.loads) inside |= link >= s.vaddr && link - s.vaddr < s.memsz;
      if (!inside) continue;
      root.module = BaseName(m.info->path);
      const auto& syms = m.elf.symbols;
      auto it = std::upper_bound(syms.begin(), syms.end(), link, [](uint64_t a, const Symbol& s) { return a < s.addr; });
      if (it != syms.begin() && link - (it - 1)->addr < (it - 1)->size) {
        const Symbol& s = *(it - 1);
        root.variable = Demangle(s.name.c_str());
        root.label = "`" + root.variable + "`" + (link == s.addr ? "" : "+" + Hex(link - s.addr)) + " (" + root.module + ")";
        ++named;
      } else {
        root.label = root.module + "+" + Hex(link) + " (no symbol)";
      }
      break;
    }
  }
  return named;
}

}  // namespace libdump::typing
