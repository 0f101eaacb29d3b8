#include "samplers/unwind/unwind_table.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/auxv.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

namespace libdump::samplers {

// ---------------------------------------------------------------------------
// Snapshots and lookups.
// ---------------------------------------------------------------------------
namespace {

struct PackedRow {
  uint32_t off;  // pc - module start
  UnwindRule rule;
};
static_assert(sizeof(PackedRow) == 8);

struct ModuleRules {
  uintptr_t start = 0, end = 0;  // the executable segments' span
  uintptr_t eh_frame_hdr = 0;    // identifies the module with start and end
  std::vector<PackedRow> rows;
  std::vector<uint32_t> page_first;  // first row with off >= page << 12; one extra at the end
};

struct ModuleEntry {
  uintptr_t start, end;
  const ModuleRules* rules;
};

struct Snapshot {
  std::vector<ModuleEntry> entries;  // sorted by start
  std::vector<std::shared_ptr<const ModuleRules>> owners;
  size_t rows = 0;
};

constexpr unsigned kStripes = 16;
struct alignas(64) Stripe {
  std::atomic<int64_t> readers{0};
};
Stripe g_stripes[kStripes];
std::atomic<const Snapshot*> g_snapshot{nullptr};

std::mutex g_build_mu;  // Refresh, Reclaim
std::vector<const Snapshot*>* g_retired = nullptr;
unsigned long long g_adds = 0, g_subs = 0;  // dl_iterate_phdr's at the last Refresh

std::shared_ptr<ModuleRules> Pack(uintptr_t start, uintptr_t end, uintptr_t hdr, const std::vector<UnwindRow>& rows) {
  auto m = std::make_shared<ModuleRules>();
  m->start = start;
  m->end = end;
  m->eh_frame_hdr = hdr;
  for (const UnwindRow& r : rows) {
    if (r.pc < start) continue;
    if (r.pc >= end) {
      if (m->rows.empty() || m->rows.back().off != end - start) m->rows.push_back({static_cast<uint32_t>(end - start), {}});
      break;
    }
    m->rows.push_back({static_cast<uint32_t>(r.pc - start), r.rule});
  }
  const size_t pages = ((end - start) >> 12) + 1;
  m->page_first.resize(pages + 1);
  size_t i = 0;
  for (size_t p = 0; p <= pages; ++p) {
    while (i < m->rows.size() && (m->rows[i].off >> 12) < p) ++i;
    m->page_first[p] = static_cast<uint32_t>(i);
  }
  return m;
}

struct Scan {
  const Snapshot* old;
  std::vector<std::shared_ptr<const ModuleRules>> found;
};

std::shared_ptr<const ModuleRules> Reuse(const Snapshot* old, uintptr_t start, uintptr_t end, uintptr_t hdr) {
  if (old == nullptr) return nullptr;
  for (const auto& m : old->owners) {
    if (m->start == start && m->end == end && m->eh_frame_hdr == hdr) return m;
  }
  return nullptr;
}

void AddModule(Scan& scan, uintptr_t bias, const ElfW(Phdr)* ph, size_t n) {
  uintptr_t start = ~uintptr_t{0}, end = 0, hdr = 0;
  std::vector<UnwindRange> readable;
  for (size_t i = 0; i < n; ++i) {
    if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_R)) {
      readable.push_back({bias + ph[i].p_vaddr, bias + ph[i].p_vaddr + ph[i].p_memsz});
    }
    if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
      start = std::min<uintptr_t>(start, bias + ph[i].p_vaddr);
      end = std::max<uintptr_t>(end, bias + ph[i].p_vaddr + ph[i].p_memsz);
    }
    if (ph[i].p_type == PT_GNU_EH_FRAME) hdr = bias + ph[i].p_vaddr;
  }
  if (end <= start || end - start >= (uintptr_t{1} << 32)) return;
  for (const auto& m : scan.found) {
    if (m->start == start) return;  // the vDSO, found twice
  }
  if (auto m = Reuse(scan.old, start, end, hdr)) {
    scan.found.push_back(std::move(m));
    return;
  }
  std::vector<UnwindRow> rows;
  // A module without .eh_frame_hdr is still known (its pcs are not
  // "unknown": a rescan would not help), with no rules.
  if (hdr != 0 && !ParseModuleUnwindRows(hdr, readable, &rows)) rows.clear();
  scan.found.push_back(Pack(start, end, hdr, rows));
}

int OnModule(dl_phdr_info* info, size_t size, void* arg) {
  Scan& scan = *static_cast<Scan*>(arg);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    g_adds = info->dlpi_adds;
    g_subs = info->dlpi_subs;
  }
  AddModule(scan, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
  return 0;
}

unsigned StripeIndex() {
  const uintptr_t tp = reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
  return static_cast<unsigned>((tp >> 12) ^ (tp >> 20)) % kStripes;
}

}  // namespace

namespace unwind_detail {
CacheEntry g_cache[kCacheEntries];
std::atomic<uintptr_t> g_standard[kCacheEntries];
}  // namespace unwind_detail

namespace {
using unwind_detail::CacheEntry;
using unwind_detail::CacheSlot;
using unwind_detail::g_cache;
using unwind_detail::g_standard;
}  // namespace

namespace {
// A Refresh of another thread may hold the build lock at the fork (the fork
// waits only for its dl_iterate_phdr): the child has no such thread. Its
// retired snapshots stay unfreed (a reader of the parent may have pinned
// them, and the list may be half updated).
void BuildForkChild() {
  new (&g_build_mu) std::mutex;
  g_retired = nullptr;
}
}  // namespace

bool UnwindTables::Refresh() {
  static const int fork_handler = pthread_atfork(nullptr, nullptr, BuildForkChild);
  (void)fork_handler;
  std::lock_guard<std::mutex> g(g_build_mu);
  Scan scan{g_snapshot.load(std::memory_order_acquire), {}};
  dl_iterate_phdr(OnModule, &scan);
  // The vDSO: glibc lists it in dl_iterate_phdr, but another libc may not.
  if (const uintptr_t vdso = getauxval(AT_SYSINFO_EHDR)) {
    const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(vdso);
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0) {
      const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(vdso + eh->e_phoff);
      uintptr_t first_vaddr = 0;
      for (size_t i = 0; i < eh->e_phnum; ++i) {
        if (ph[i].p_type == PT_LOAD) {
          first_vaddr = ph[i].p_vaddr;
          break;
        }
      }
      AddModule(scan, vdso - first_vaddr, ph, eh->e_phnum);
    }
  }
  std::sort(scan.found.begin(), scan.found.end(), [](const auto& a, const auto& b) { return a->start < b->start; });
  if (scan.old != nullptr && scan.old->owners.size() == scan.found.size() &&
      std::equal(scan.found.begin(), scan.found.end(), scan.old->owners.begin())) {
    return false;
  }
  auto* snap = new Snapshot;
  for (const auto& m : scan.found) {
    // Overlapping spans (should not happen): the first stands.
    if (!snap->entries.empty() && m->start < snap->entries.back().end) continue;
    snap->entries.push_back({m->start, m->end, m.get()});
    snap->owners.push_back(m);
    snap->rows += m->rows.size();
  }
  const Snapshot* old = g_snapshot.exchange(snap, std::memory_order_seq_cst);
  // Unloaded modules' pcs may now be another module's.
  for (CacheEntry& e : g_cache) {
    e.rule.store(0, std::memory_order_relaxed);
    e.keyed.store(0, std::memory_order_relaxed);
  }
  for (std::atomic<uintptr_t>& e : g_standard) e.store(0, std::memory_order_relaxed);
  if (old != nullptr) {
    if (g_retired == nullptr) g_retired = new std::vector<const Snapshot*>;
    g_retired->push_back(old);
  }
  return true;
}

bool UnwindTables::Stale() {
  unsigned long long adds = 0, subs = 0;
  struct Counts {
    unsigned long long* adds;
    unsigned long long* subs;
  } c{&adds, &subs};
  // Every 100 ms from the worker. A fork holds the loader's lock itself
  // across its copy (capture/loader_fork.h): neither this nor Refresh, which
  // parses tables and allocates inside the walk, can leave it held.
  {
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t size, void* arg) {
          auto* c = static_cast<Counts*>(arg);
          if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
            *c->adds = info->dlpi_adds;
            *c->subs = info->dlpi_subs;
          }
          return 1;
        },
        &c);
  }
  std::lock_guard<std::mutex> g(g_build_mu);
  return g_snapshot.load(std::memory_order_relaxed) == nullptr || adds != g_adds || subs != g_subs;
}

bool UnwindTables::Reclaim() {
  std::lock_guard<std::mutex> g(g_build_mu);
  if (g_retired == nullptr || g_retired->empty()) return true;
  // Every snapshot in the list was replaced before now: a stripe seen with
  // no reader after that has no reader of it (a reader counts itself in
  // before it loads the pointer).
  for (Stripe& s : g_stripes) {
    if (s.readers.load(std::memory_order_seq_cst) != 0) return false;
  }
  for (const Snapshot* s : *g_retired) delete s;
  g_retired->clear();
  return true;
}

void UnwindTables::Reader::Pin() {
  if (stripe_ != kUnpinned) return;
  stripe_ = StripeIndex();
  g_stripes[stripe_].readers.fetch_add(1, std::memory_order_seq_cst);
}
UnwindTables::Reader::~Reader() {
  if (stripe_ != kUnpinned) g_stripes[stripe_].readers.fetch_sub(1, std::memory_order_release);
}


UnwindLookup UnwindTables::Lookup(uintptr_t pc) {
  UnwindLookup out;
  const Snapshot* s = g_snapshot.load(std::memory_order_seq_cst);
  if (s == nullptr) return out;
  // The module: a binary search over a few dozen entries.
  const ModuleEntry* e = s->entries.data();
  size_t lo = 0, hi = s->entries.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (e[mid].start <= pc) lo = mid + 1; else hi = mid;
  }
  if (lo == 0 || pc >= e[lo - 1].end) return out;
  const ModuleRules& m = *e[lo - 1].rules;
  out.module_known = true;
  const uint32_t off = static_cast<uint32_t>(pc - m.start);
  const size_t page = off >> 12;
  if (m.rows.empty() || page + 1 >= m.page_first.size()) return out;
  // The last row at or before off: at or after the page's first row less
  // one, before the next page's first row.
  size_t a = m.page_first[page], b = m.page_first[page + 1];
  a = a > 0 ? a - 1 : 0;
  const PackedRow* r = m.rows.data();
  if (r[a].off > off) return out;  // before the module's first FDE
  while (b - a > 1) {
    const size_t mid = (a + b) / 2;
    if (r[mid].off <= off) a = mid; else b = mid;
  }
  out.rule = r[a].rule;
  return out;
}

UnwindLookup UnwindTables::LookupAndCache(uintptr_t pc, size_t slot, Reader& pin) {
  pin.Pin();
  const UnwindLookup l = Lookup(pc);
  // An unknown module is not cached: a Refresh may add it (and clears the
  // cache anyway).
  if (l.rule.StandardFrame()) {
    g_standard[slot].store(pc, std::memory_order_relaxed);
  } else if (l.module_known) {
    const uint64_t v = unwind_detail::PackRule(l.rule, l.module_known);
    CacheEntry& e = g_cache[slot];
    e.rule.store(v, std::memory_order_relaxed);
    e.keyed.store(pc ^ v, std::memory_order_relaxed);
  }
  return l;
}

size_t UnwindTables::Modules() {
  const Snapshot* s = g_snapshot.load();
  return s == nullptr ? 0 : s->entries.size();
}

size_t UnwindTables::Rows() {
  const Snapshot* s = g_snapshot.load();
  return s == nullptr ? 0 : s->rows;
}

}  // namespace libdump::samplers
