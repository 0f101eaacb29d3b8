// Unwind rules for every loaded module, prepared ahead of time from the
// modules' .eh_frame (found through .eh_frame_hdr), so that a signal handler
// or the allocator's hook can unwind frameless code without parsing DWARF,
// allocating or taking a lock (the loader's lock included: dl_iterate_phdr
// is called by the builder only, never by a lookup).
//
// Why not libunwind in the handler: it finds a pc's unwind table through
// dl_iterate_phdr, which takes the loader's lock, so a SIGPROF that lands
// inside dlopen (or inside libunwind itself) would deadlock; its caches are
// filled lazily, under locks, on the first unwind through new code. Why not
// elfutils' CFI reader to build the table: it answers one address at a time,
// needs the ELF's section headers (the vDSO and a module being dlopened have
// only their mapped image), and a whole module's rows are what is wanted.
// The CFI subset x86-64 compilers emit is small (docs/PROFILING.md).
//
// A rule (eh_frame_rules.h) says where the caller's registers are at a pc.
// Rows are 8 bytes, sorted by pc, with a per-4-KiB page index: a lookup
// reads the module array, one index entry and a few rows.
//
// Tables are published as one immutable snapshot through an atomic pointer;
// a new one replaces it when modules are loaded or unloaded, and the old one
// is freed once every lookup that might be reading it has finished (readers
// count themselves in and out on striped counters: RCU without a thread
// registry).
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <vector>

#include "samplers/unwind/eh_frame_rules.h"

namespace libdump::samplers {

// Where a lookup comes from, for counting what could not be unwound.
struct UnwindLookup {
  UnwindRule rule;
  bool module_known = false;
};

namespace unwind_detail {
// The lookup cache's entries (UnwindTables::CachedLookup): the packed rule
// (0 = empty) and the pc xor the rule, so that a torn pair is a miss.
struct CacheEntry {
  std::atomic<uint64_t> keyed{0};
  std::atomic<uint64_t> rule{0};
};
inline constexpr size_t kCacheEntries = 4096;
extern CacheEntry g_cache[kCacheEntries];
// The pcs looked up whose rule is the standard frame, one word each (0 =
// empty): the walks' fast path asks only this, so its probe is one load and
// one compare, and a word is never torn. Their rules stay out of g_cache.
extern std::atomic<uintptr_t> g_standard[kCacheEntries];
inline size_t CacheSlot(uintptr_t pc) { return static_cast<size_t>((pc * 0x9e3779b97f4a7c15ULL) >> 52); }
constexpr uint64_t PackRule(const UnwindRule& r, bool module_known) {
  return uint64_t{1} << 63 | uint64_t{module_known} << 32 | uint64_t{r.kind} << 24 | uint64_t{r.fp_slot} << 16 | r.cfa;
}
inline UnwindLookup UnpackRule(uint64_t v) {
  UnwindLookup l;
  l.module_known = (v >> 32) & 1;
  l.rule.kind = static_cast<uint8_t>(v >> 24);
  l.rule.fp_slot = static_cast<uint8_t>(v >> 16);
  l.rule.cfa = static_cast<uint16_t>(v);
  return l;
}
}  // namespace unwind_detail

class UnwindTables {
 public:
  // Scans the loaded modules (dl_iterate_phdr and the vDSO) and publishes a
  // snapshot, reusing the rows of modules already parsed. Not
  // async-signal-safe; one caller at a time (an internal mutex). Returns
  // whether anything changed.
  static bool Refresh();
  // Whether modules were loaded or unloaded since the last Refresh (cheap:
  // dl_iterate_phdr's load counters, read from its first callback).
  static bool Stale();
  // Frees snapshots replaced by Refresh once no lookup can be reading them;
  // false if some still wait. Not async-signal-safe.
  static bool Reclaim();

  // The rule at pc. Async-signal-safe, lock-free, allocation-free; call
  // between Enter and Exit (a Reader does).
  static UnwindLookup Lookup(uintptr_t pc);
  // Statistics of the current snapshot, for tests.
  static size_t Modules();
  static size_t Rows();


  // Pins the current snapshot for Lookup while alive (from Pin() on, if
  // made with pin_now false: a walk that finds every frame in the cache
  // never pins).
  class Reader {
   public:
    explicit Reader(bool pin_now = true) {
      if (pin_now) Pin();
    }
    ~Reader();
    void Pin();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

   private:
    static constexpr unsigned kUnpinned = ~0u;
    unsigned stripe_ = kUnpinned;
  };

  // Lookup through direct-mapped caches of the pcs looked up before, written
  // and read without a lock: standard frames as the pc alone (one word),
  // other rules as two words, the rule and the pc xor the rule (a torn entry
  // fails the xor check and is a miss); 4096 entries each. A walk through
  // code seen before costs a load or two per frame, not a search.
  // pin is pinned on a miss only. Refresh clears the cache; an entry a
  // handler computes from the old snapshot while it does may outlive the
  // clear, which matters only for an unloaded module's address reused by
  // another (a wrong rule there: garbage frames, still bounds-checked).
  // Inline: a hit is a few loads in the walk's loop, not a call.
  static UnwindLookup CachedLookup(uintptr_t pc, Reader& pin) {
    const size_t slot = unwind_detail::CacheSlot(pc);
    if (unwind_detail::g_standard[slot].load(std::memory_order_relaxed) == pc) {
      return {UnwindRule{UnwindRule::kFp, 2, 16}, true};
    }
    const unwind_detail::CacheEntry& e = unwind_detail::g_cache[slot];
    const uint64_t rule = e.rule.load(std::memory_order_relaxed);
    if (rule != 0 && (e.keyed.load(std::memory_order_relaxed) ^ rule) == pc) return unwind_detail::UnpackRule(rule);
    return LookupAndCache(pc, slot, pin);
  }
  // Whether the cache holds pc as a standard frame: the walks' fast path.
  static bool CachedStandardFrame(uintptr_t pc) {
    return unwind_detail::g_standard[unwind_detail::CacheSlot(pc)].load(std::memory_order_relaxed) == pc;
  }

 private:
  // CachedLookup's miss: the search, then the cache's slot filled.
  static UnwindLookup LookupAndCache(uintptr_t pc, size_t slot, Reader& pin);
};

}  // namespace libdump::samplers
