#include "platform/capture/symbol_tables.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace libdump::capture {

namespace {

// A read-only mapping of a whole file.
struct MappedFile {
  const uint8_t* data = nullptr;
  size_t size = 0;
  MappedFile() = default;
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data = static_cast<const uint8_t*>(p);
        size = static_cast<size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  MappedFile(MappedFile&& o) noexcept : data(o.data), size(o.size) { o.data = nullptr; o.size = 0; }
  MappedFile& operator=(MappedFile&& o) noexcept {
    std::swap(data, o.data);
    std::swap(size, o.size);
    return *this;
  }
  ~MappedFile() {
    if (data != nullptr) ::munmap(const_cast<uint8_t*>(data), size);
  }
  bool Has(uint64_t off, uint64_t len) const { return off <= size && len <= size - off; }
};

// Memory for the symbol arrays straight from mmap: a heap dump loads the
// tables before it walks the heap, and rows allocated there would be dumped
// as the program's own objects (half a megabyte of them for a small
// program with libstdc++ and libc).
template <class T>
struct MappedAllocator {
  using value_type = T;
  MappedAllocator() = default;
  template <class U>
  MappedAllocator(const MappedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { ::munmap(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const MappedAllocator<U>&) const { return true; }
};

struct Sym {
  uint64_t start;  // link-time address
  uint64_t size;
  uint32_t name;   // offset into the string table
};

}  // namespace

struct Symbolizer::Table {
  MappedFile file;
  const char* strtab = nullptr;
  uint64_t strtab_size = 0;
  std::vector<Sym, MappedAllocator<Sym>> syms;  // sorted by start

  // Reads the function symbols of one symbol-table section (SHT_SYMTAB, else
  // SHT_DYNSYM); every offset is checked against the file's size.
  bool Load(MappedFile f) {
    if (!f.Has(0, sizeof(Elf64_Ehdr))) return false;
    Elf64_Ehdr eh;
    std::memcpy(&eh, f.data, sizeof eh);
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || !f.Has(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) {
      return false;
    }
    auto shdr = [&](size_t i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, f.data + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
      return sh;
    };
    for (uint32_t want : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
      for (size_t i = 0; i < eh.e_shnum; ++i) {
        const Elf64_Shdr sh = shdr(i);
        if (sh.sh_type != want || sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh.e_shnum) continue;
        const Elf64_Shdr str = shdr(sh.sh_link);
        if (!f.Has(sh.sh_offset, sh.sh_size) || !f.Has(str.sh_offset, str.sh_size)) continue;
        for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
          Elf64_Sym s;
          std::memcpy(&s, f.data + sh.sh_offset + off, sizeof s);
          const int type = ELF64_ST_TYPE(s.st_info);
          if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_value == 0 || s.st_name >= str.sh_size) continue;
          syms.push_back({s.st_value, s.st_size, s.st_name});
        }
        if (!syms.empty()) {
          strtab = reinterpret_cast<const char*>(f.data + str.sh_offset);
          strtab_size = str.sh_size;
          // Aliases share an address: prefer the sized, then the first-named one.
          std::sort(syms.begin(), syms.end(), [](const Sym& a, const Sym& b) {
            return a.start != b.start ? a.start < b.start : a.size > b.size;
          });
          file = std::move(f);
          return true;
        }
      }
    }
    return false;
  }

  std::string_view Name(const Sym& s) const {
    const char* p = strtab + s.name;
    return {p, strnlen(p, strtab_size - s.name)};
  }
};

Symbolizer::Symbolizer(const std::vector<Module>& modules) : modules_(modules) {
  for (const Module& m : modules) {
    auto t = std::make_unique<Table>();
    // Stripped system libraries keep full tables in Debian's -dbgsym files.
    bool ok = !m.path.empty() && t->Load(MappedFile(m.path));
    if (!ok && m.build_id.size() > 2) {
      const std::string dbg = "/usr/lib/debug/.build-id/" + m.build_id.substr(0, 2) + "/" +
                              m.build_id.substr(2) + ".debug";
      t->syms.clear();
      ok = t->Load(MappedFile(dbg));
    }
    tables_.push_back(std::move(t));
  }
}

Symbolizer::~Symbolizer() = default;

size_t Symbolizer::symbol_count() const {
  size_t n = 0;
  for (const auto& t : tables_) n += t->syms.size();
  return n;
}

Symbol Symbolizer::Lookup(uint64_t pc) const {
  Symbol out;
  for (size_t i = 0; i < modules_.size(); ++i) {
    const Module& m = modules_[i];
    bool inside = false;
    for (const Segment& s : m.segments) inside = inside || (pc >= s.start && pc < s.end);
    if (!inside) continue;
    out.module = &m;
    const Table& t = *tables_[i];
    const uint64_t rel = pc - m.base;
    auto it = std::upper_bound(t.syms.begin(), t.syms.end(), rel,
                               [](uint64_t v, const Sym& s) { return v < s.start; });
    if (it == t.syms.begin()) return out;
    --it;
    // A symbol without a size (hand-written assembly) covers up to the next one.
    if (it->size != 0 && rel >= it->start + it->size) return out;
    out.name = t.Name(*it);
    out.entry = it->start + m.base;
    return out;
  }
  return out;
}

std::string Demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  const std::string mangled(name);
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (d == nullptr) return mangled;
  std::string out(d);
  std::free(d);
  return out;
}

}  // namespace libdump::capture
