#include "glibc_arena_finder.h"

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <unordered_set>

#include "image_window.h"
#include "libc_files.h"

namespace libdump::heapwalk {
namespace {

using namespace glibc;
using procimage::ImageMapping;
using procimage::ImageModule;
using procimage::ProcessImage;

// A thread arena list longer than this is a loop (arena_max is 8 per core).
constexpr size_t kMaxArenas = 4096;
// The brk heap ends at the page holding top's end; some slack for images
// that round mappings.
constexpr uint64_t kTopSlack = 64 << 10;

bool Aligned16InMapping(const ProcessImage& image, uint64_t p) {
  const ImageMapping* m = p % kAlignment == 0 ? image.FindMapping(p) : nullptr;
  return m != nullptr && m->writable;
}

// libc's writable data: its own writable mappings and the anonymous one
// right after them (.bss past the file's end).
std::vector<std::pair<uint64_t, uint64_t>> LibcData(const ProcessImage& image, const ImageModule& libc) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t last_end = 0;
  for (const ImageMapping& m : image.Mappings()) {
    // Paths can differ by a symlink (/lib and /usr/lib): the range decides too.
    const bool own = m.path == libc.path || (!m.IsAnonymous() && m.start >= libc.start && m.start < libc.end);
    if (m.present && m.writable && (own || (m.IsAnonymous() && m.start == last_end && last_end != 0)))
      out.emplace_back(m.start, m.end);
    if (own) last_end = m.end;
  }
  return out;
}

// main_arena and its `next` list; false when the list does not come back.
bool ArenaList(const ProcessImage& image, uint64_t main, std::vector<uint64_t>* arenas,
               std::vector<HeapDamage>* damage) {
  arenas->assign(1, main);
  std::unordered_set<uint64_t> seen{main};
  uint64_t a = 0;
  if (!image.ReadValue(main + offsetof(MallocState, next), &a)) return false;
  while (a != main) {
    if (arenas->size() > kMaxArenas || !seen.insert(a).second) {
      if (damage) damage->push_back({a, "arena list loops without coming back to main_arena"});
      return false;
    }
    const std::string problem = ArenaProblem(image, a, false);
    if (!problem.empty()) {
      if (damage) damage->push_back({a, "arena " + Hex(a) + " of the arena list: " + problem});
      return false;
    }
    arenas->push_back(a);
    if (!image.ReadValue(a + offsetof(MallocState, next), &a)) return false;
  }
  return true;
}

// tcache_bins follows from tcache_max_bytes (do_set_tcache_max).
uint64_t TcacheBinsFor(uint64_t max_bytes) {
  const uint64_t chunk = std::max<uint64_t>(kMinChunk, (max_bytes + 8 + kAlignment - 1) & ~(kAlignment - 1));
  return (chunk - kMinChunk + kAlignment - 1) / kAlignment + 1;
}

bool PlausibleMp(const MallocPar& p, const ProcessImage& image, uint64_t main_top) {
  const ImageMapping* heap = image.FindMapping(main_top);
  return heap != nullptr && p.sbrk_base >= heap->start && p.sbrk_base <= main_top && p.tcache_bins >= 1 &&
         p.tcache_bins <= kTcacheBins && p.tcache_bins == TcacheBinsFor(p.tcache_max_bytes) &&
         p.tcache_count <= 65535 && p.tcache_max_bytes <= TcacheBinSize(kTcacheBins) && p.n_mmaps >= 0 &&
         p.n_mmaps <= p.max_n_mmaps && p.mmapped_mem % 4096 == 0 && p.mmapped_mem <= p.max_mmapped_mem &&
         p.mmap_threshold <= kHeapMaxSize / 2;
}

}  // namespace

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

const ImageModule* FindLibc(const ProcessImage& image) {
  for (const ImageModule& m : image.Modules()) {
    const std::string base = m.path.substr(m.path.rfind('/') + 1);
    if (base.rfind("libc.so", 0) == 0 || (base.rfind("libc-", 0) == 0 && base.ends_with(".so"))) return &m;
  }
  return nullptr;
}

std::string ArenaProblem(const ProcessImage& image, uint64_t addr, bool main) {
  MallocState s;
  if (!image.ReadValue(addr, &s)) return "unreadable";
  if (s.top == 0 || !Aligned16InMapping(image, s.top)) return "top " + Hex(s.top) + " is not in a writable mapping";
  uint64_t head = 0;
  if (!image.ReadValue(s.top + 8, &head)) return "top's header unreadable";
  const uint64_t top_end = s.top + ChunkSize(head);
  const ImageMapping* m = image.FindMapping(s.top);
  if (!(head & kPrevInuse) || ChunkSize(head) % kAlignment != 0 || top_end > m->end || top_end < s.top)
    return "top's size " + Hex(head) + " does not fit its mapping";
  if (s.system_mem > (1ull << 47) || s.system_mem < ChunkSize(head)) return "system_mem " + Hex(s.system_mem) + " implausible";
  if (main) {
    if (m->end - top_end >= kTopSlack) return "top ends " + Hex(m->end - top_end) + " bytes before its mapping does";
  } else {
    HeapInfo hi;
    const uint64_t h = HeapFor(s.top);
    if (HeapFor(addr) + sizeof(HeapInfo) != addr) return "not just after a heap_info";
    if (!image.ReadValue(h, &hi) || hi.ar_ptr != addr || h + hi.size != top_end)
      return "the heap_info of its top does not point back to it";
  }
  for (int i = 1; i < kBins; ++i) {
    const uint64_t fd = s.bins[2 * (i - 1)], bk = s.bins[2 * (i - 1) + 1], self = BinAt(addr, i);
    if ((fd == self) != (bk == self)) return "bin " + std::to_string(i) + " half empty";
    if (fd != self && (!Aligned16InMapping(image, fd) || !Aligned16InMapping(image, bk)))
      return "bin " + std::to_string(i) + " links outside the heap";
  }
  for (uint64_t f : s.fastbins)
    if (f != 0 && !Aligned16InMapping(image, f)) return "a fastbin links outside the heap";
  return "";
}

ArenaRoots FindArenaRoots(const ProcessImage& image, const GlibcOptions& options) {
  ArenaRoots out;
  const ImageModule* libc = FindLibc(image);
  if (libc == nullptr) {
    out.found_by = "no libc.so.6 among the image's modules";
    return out;
  }
  LibcFiles files = ReadLibcFiles(libc->path, libc->build_id,
                                  options.use_symbols ? options.debug_dirs : std::vector<std::string>{});
  if (!options.use_symbols) files.main_arena = files.mp = files.tcache_tls = std::nullopt;
  const uint64_t bias = libc->load_bias;

  if (files.main_arena) {
    const uint64_t a = bias + *files.main_arena;
    const std::string problem = ArenaProblem(image, a, true);
    if (problem.empty()) {
      out.main_arena = a;
      out.found_by = "main_arena " + Hex(a) + " from the .symtab of " + files.symbols_from;
      if (!ArenaList(image, a, &out.arenas, &out.damage)) out.found_by += " (its arena list is damaged)";
    } else {
      out.damage.push_back({a, "main_arena from " + files.symbols_from + " does not read as an arena: " + problem});
    }
  }
  const auto data = LibcData(image, *libc);
  if (out.main_arena == 0) {
    ImageWindow win(image);
    size_t candidates = 0;
    for (const auto& [start, end] : data) {
      for (uint64_t a = (start + 7) & ~uint64_t{7}; a + sizeof(MallocState) <= end && out.main_arena == 0; a += 8) {
        uint64_t top = 0, next = 0;
        if (!win.Word(a + offsetof(MallocState, top), &top) || top == 0 || top % kAlignment != 0 ||
            !win.Word(a + offsetof(MallocState, next), &next) || next == 0 || next % 8 != 0)
          continue;
        ++candidates;
        std::vector<uint64_t> arenas;
        if (ArenaProblem(image, a, true).empty() && ArenaList(image, a, &arenas, nullptr)) {
          out.main_arena = a;
          out.arenas = std::move(arenas);
        }
      }
    }
    if (out.main_arena == 0) {
      out.found_by = "no malloc_state in libc's data reads as main_arena (" + std::to_string(candidates) +
                     " candidates" + (files.symbols_from.empty() ? ", no libc symbols" : "") + ")";
      return out;
    }
    out.found_by = "main_arena " + Hex(out.main_arena) + " by structure in libc's data (" +
                   std::to_string(out.arenas.size()) + " arenas on its list, top in a heap)";
  }

  MallocState main;
  image.ReadValue(out.main_arena, &main);
  if (files.mp && image.ReadValue(bias + *files.mp, &out.mp_value) && PlausibleMp(out.mp_value, image, main.top)) {
    out.mp = bias + *files.mp;
  }
  for (const auto& [start, end] : data) {
    for (uint64_t a = (start + 7) & ~uint64_t{7}; out.mp == 0 && a + sizeof(MallocPar) <= end; a += 8) {
      MallocPar p;
      const bool in_arena = a + sizeof(MallocPar) > out.main_arena && a < out.main_arena + sizeof(MallocState);
      if (!in_arena && image.ReadValue(a, &p) && p.sbrk_base != 0 && PlausibleMp(p, image, main.top)) {
        out.mp = a;
        out.mp_value = p;
      }
    }
  }
  if (out.mp == 0) out.mp_value = MallocPar{};

  for (const TlsSlot& slot : files.tls_slots) {
    int64_t tpoff = 0;
    if (files.tcache_tls && slot.offset != *files.tcache_tls) continue;
    if (image.ReadValue(bias + slot.got, &tpoff)) out.tcache_tpoffs.push_back(tpoff);
  }
  std::sort(out.tcache_tpoffs.begin(), out.tcache_tpoffs.end());
  out.tcache_tpoffs.erase(std::unique(out.tcache_tpoffs.begin(), out.tcache_tpoffs.end()), out.tcache_tpoffs.end());
  return out;
}

}  // namespace libdump::heapwalk
