#include "samplers/symbolize/crash_symbols.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "samplers/common/own_allocations.h"

namespace libdump::samplers::crash_symbols {
namespace {

struct Entry {
  uint64_t addr;      // absolute
  uint32_t size;      // 0: up to the next symbol
  uint32_t name_off;  // into the module's names, NUL-terminated
};

// One module's arrays, in one mapping: this header, the entries sorted by
// addr, then the names.
struct ModuleTable {
  uint64_t lo, hi;  // the module's address range
  size_t count;
  size_t bytes;  // of the mapping
  const Entry* entries;
  const char* names;
};

// Modules sorted by lo, in one mapping: this header, then the array.
struct Snapshot {
  size_t count;
  size_t symbols;
  size_t bytes;
  const ModuleTable* const* modules;  // count of them, just after the header
};

std::atomic<const Snapshot*> g_current{nullptr};
std::mutex g_mu;  // Prepare
// The loader's counters when the current snapshot was read (under g_mu).
unsigned long long g_adds = 0, g_subs = 0;
// Tables kept from earlier calls, by path and address range (under g_mu).
std::map<std::string, const ModuleTable*>* g_known = nullptr;

void* Map(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
size_t PageRound(size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) & ~(page - 1);
}

struct Counters {
  unsigned long long adds = 0, subs = 0;
};
int ReadCounters(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    auto* c = static_cast<Counters*>(data);
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // the first module carries them
}
Counters LoaderCounters() {
  Counters c;
  dl_iterate_phdr(ReadCounters, &c);
  return c;
}

std::string Demangled(const char* versioned) {
  // .dynsym names may carry their version (memcpy@GLIBC_2.14): the
  // function's name is what comes before it, and only that demangles.
  const std::string name(versioned, strcspn(versioned, "@"));
  std::string out;
  if (name.size() > 2 && name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    if (char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status)) {
      out = d;
      std::free(d);
    }
  }
  if (out.empty()) out = name;
  if (out.size() > kMaxName) out.resize(kMaxName);
  return out;
}

// Separate debug files by build id (/usr/lib/debug/.build-id, where
// Debian's -dbgsym packages put them) only: dwfl_standard_find_debuginfo
// would end in debuginfod, whose client library (and libcurl with a score
// of others) it dlopens into the program.
int FindLocalDebuginfo(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                       const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                       char** debuginfo_file_name) {
  return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                      debuginfo_file_name);
}

struct Sym {
  uint64_t addr;
  uint64_t size;
  bool global;
  const char* name;
};

// The module's function symbols, demangled, laid out in a new mapping;
// null if it has none (or the mapping failed).
const ModuleTable* BuildModule(Dwfl_Module* mod, uint64_t lo, uint64_t hi) {
  const int n = dwfl_module_getsymtab(mod);
  if (n <= 0) return nullptr;
  std::vector<Sym> syms;
  syms.reserve(static_cast<size_t>(n));
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr addr = 0;
    GElf_Word shndx = 0;
    const char* name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, nullptr, nullptr);
    if (name == nullptr || name[0] == '\0' || shndx == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    if (addr < lo || addr >= hi) continue;
    syms.push_back({addr, sym.st_size, GELF_ST_BIND(sym.st_info) != STB_LOCAL, name});
  }
  if (syms.empty()) return nullptr;
  // Aliases share an address: a global name with a size is the one people
  // know (memcpy rather than __memcpy_avx_unaligned's local alias).
  std::sort(syms.begin(), syms.end(), [](const Sym& a, const Sym& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    if (a.global != b.global) return a.global;
    return a.size > b.size;
  });
  syms.erase(std::unique(syms.begin(), syms.end(), [](const Sym& a, const Sym& b) { return a.addr == b.addr; }),
             syms.end());
  std::vector<std::string> names;
  names.reserve(syms.size());
  size_t name_bytes = 0;
  for (const Sym& s : syms) {
    names.push_back(Demangled(s.name));
    name_bytes += names.back().size() + 1;
  }
  const size_t bytes = PageRound(sizeof(ModuleTable) + syms.size() * sizeof(Entry) + name_bytes);
  auto* base = static_cast<char*>(Map(bytes));
  if (base == nullptr) return nullptr;
  auto* t = reinterpret_cast<ModuleTable*>(base);
  auto* entries = reinterpret_cast<Entry*>(base + sizeof(ModuleTable));
  char* pool = reinterpret_cast<char*>(entries + syms.size());
  size_t off = 0;
  for (size_t i = 0; i < syms.size(); ++i) {
    entries[i] = {syms[i].addr, static_cast<uint32_t>(std::min<uint64_t>(syms[i].size, UINT32_MAX)),
                  static_cast<uint32_t>(off)};
    std::memcpy(pool + off, names[i].c_str(), names[i].size() + 1);
    off += names[i].size() + 1;
  }
  *t = {lo, hi, syms.size(), bytes, entries, pool};
  // Read-only from here on: a stray write elsewhere in a dying process
  // cannot change a name.
  mprotect(base, bytes, PROT_READ);
  return t;
}

struct Reported {
  uint64_t lo, hi;
  Dwfl_Module* mod;
  std::string key;
};

int CollectModule(Dwfl_Module* mod, void**, const char* name, Dwarf_Addr lo, void* arg) {
  Dwarf_Addr start = 0, end = 0;
  dwfl_module_info(mod, nullptr, &start, &end, nullptr, nullptr, nullptr, nullptr);
  (void)lo;
  auto* out = static_cast<std::vector<Reported>*>(arg);
  out->push_back({start, end, mod, std::string(name != nullptr ? name : "") + "@" + std::to_string(start) + "-" +
                                       std::to_string(end)});
  return DWARF_CB_OK;
}

}  // namespace

bool Prepare() {
  OwnAllocationScope own;  // the profiler's memory, not the program's
  std::lock_guard<std::mutex> g(g_mu);
  if (g_known == nullptr) g_known = new std::map<std::string, const ModuleTable*>;
  // Read first: a library loaded while the tables are built makes them
  // stale at once, not never.
  const Counters counters = LoaderCounters();
  static const Dwfl_Callbacks kCallbacks = {
      .find_elf = dwfl_linux_proc_find_elf,
      .find_debuginfo = FindLocalDebuginfo,
      .section_address = nullptr,
      .debuginfo_path = nullptr,
  };
  Dwfl* dwfl = dwfl_begin(&kCallbacks);
  if (dwfl == nullptr) return false;
  if (dwfl_linux_proc_report(dwfl, getpid()) != 0 || dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
    dwfl_end(dwfl);
    return false;
  }
  std::vector<Reported> reported;
  dwfl_getmodules(dwfl, CollectModule, &reported, 0);
  std::vector<const ModuleTable*> tables;
  for (const Reported& r : reported) {
    auto it = g_known->find(r.key);
    const ModuleTable* t = it != g_known->end() ? it->second : BuildModule(r.mod, r.lo, r.hi);
    // A module without symbols is remembered too, so it is not read again.
    if (it == g_known->end()) g_known->emplace(r.key, t);
    if (t != nullptr) tables.push_back(t);
  }
  dwfl_end(dwfl);
  std::sort(tables.begin(), tables.end(), [](const ModuleTable* a, const ModuleTable* b) { return a->lo < b->lo; });
  const size_t bytes = PageRound(sizeof(Snapshot) + tables.size() * sizeof(ModuleTable*));
  auto* s = static_cast<Snapshot*>(Map(bytes));
  if (s == nullptr) return false;
  auto* modules = reinterpret_cast<const ModuleTable**>(s + 1);
  s->modules = modules;
  s->count = tables.size();
  s->symbols = 0;
  s->bytes = bytes;
  for (size_t i = 0; i < tables.size(); ++i) {
    modules[i] = tables[i];
    s->symbols += tables[i]->count;
    s->bytes += tables[i]->bytes;
  }
  mprotect(s, bytes, PROT_READ);
  g_adds = counters.adds;
  g_subs = counters.subs;
  g_current.store(s, std::memory_order_release);
  return true;
}

bool Prepared() { return g_current.load(std::memory_order_acquire) != nullptr; }

bool Stale() {
  const Counters c = LoaderCounters();
  std::lock_guard<std::mutex> g(g_mu);
  return c.adds != g_adds || c.subs != g_subs;
}

std::string_view Lookup(uintptr_t addr) {
  const Snapshot* s = g_current.load(std::memory_order_acquire);
  if (s == nullptr || s->count == 0) return {};
  // The last module starting at or below addr.
  size_t lo = 0, hi = s->count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (s->modules[mid]->lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return {};
  const ModuleTable* m = s->modules[lo - 1];
  if (addr >= m->hi) return {};
  // The last symbol starting at or below addr.
  size_t a = 0, b = m->count;
  while (a < b) {
    const size_t mid = a + (b - a) / 2;
    if (m->entries[mid].addr <= addr) a = mid + 1;
    else b = mid;
  }
  if (a == 0) return {};
  const Entry& e = m->entries[a - 1];
  // A symbol without a size (hand-written assembly) covers up to the next.
  if (e.size != 0 && addr - e.addr >= e.size) return {};
  const char* name = m->names + e.name_off;
  size_t len = 0;
  while (len < kMaxName && name[len] != '\0') ++len;
  return {name, len};
}

Stats CurrentStats() {
  Stats st;
  if (const Snapshot* s = g_current.load(std::memory_order_acquire)) {
    st.modules = s->count;
    st.symbols = s->symbols;
    st.bytes = s->bytes;
  }
  return st;
}

}  // namespace libdump::samplers::crash_symbols
