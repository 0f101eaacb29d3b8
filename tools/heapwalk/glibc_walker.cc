#include "glibc_walker.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "glibc_arena_finder.h"
#include "glibc_layout.h"
#include "image_window.h"

namespace libdump::heapwalk {
namespace {

using namespace glibc;
using procimage::ImageMapping;
using procimage::ProcessImage;

constexpr size_t kMaxDamage = 1000;
constexpr uint64_t kPage = 4096;

bool IsFree(ChunkState s) {
  return s != ChunkState::kInUse && s != ChunkState::kMmapped && s != ChunkState::kTop;
}

class Walker {
 public:
  Walker(const ProcessImage& image, const GlibcOptions& options) : image_(image), options_(options), win_(image) {}

  GlibcHeap Run() {
    ArenaRoots roots = FindArenaRoots(image_, options_);
    out_.walk.allocator = "glibc 2.36 ptmalloc";
    out_.walk.found_by = roots.found_by;
    for (auto& d : roots.damage) Damage(d.addr, d.what);
    if (roots.main_arena == 0) {
      Damage(0, "not a glibc heap: " + roots.found_by);
      Finish();
      return std::move(out_);
    }
    out_.main_arena = roots.main_arena;
    out_.walk.not_roots.push_back({roots.main_arena, roots.main_arena + sizeof(glibc::MallocState)});
    out_.mp = roots.mp;
    out_.arenas = roots.arenas;
    mp_ = roots.mp_value;
    for (uint64_t a : out_.arenas) WalkArenaHeaps(a);
    std::vector<GlibcChunk> mmapped = WalkMmapped();
    size_t count = mmapped.size();
    for (const Region& r : regions_) count += WalkRegion(r, true);
    out_.chunks.reserve(count);
    for (const Region& r : regions_) WalkRegion(r, false);
    out_.chunks.insert(out_.chunks.end(), mmapped.begin(), mmapped.end());
    std::sort(out_.chunks.begin(), out_.chunks.end(),
              [](const GlibcChunk& a, const GlibcChunk& b) { return a.addr < b.addr; });
    DropOverlaps();
    for (uint64_t a : out_.arenas) WalkFastbins(a);
    FindTcaches(roots);
    for (uint64_t a : out_.arenas) WalkBins(a);
    Finish();
    return std::move(out_);
  }

 private:
  void Damage(uint64_t addr, std::string what) {
    if (out_.walk.damage.size() < kMaxDamage) {
      out_.walk.damage.push_back({addr, std::move(what)});
    } else {
      ++damage_left_off_;
    }
  }

  // Lists link neighbours often: the chunks either side of the last one
  // found are tried before a search.
  GlibcChunk* Chunk(uint64_t addr) {
    auto& cs = out_.chunks;
    for (size_t i : {hint_ + 1, hint_ - 1, hint_}) {
      if (i < cs.size() && cs[i].addr == addr) return &cs[(hint_ = i)];
    }
    GlibcChunk* c = const_cast<GlibcChunk*>(out_.Find(addr));
    if (c != nullptr) hint_ = static_cast<size_t>(c - cs.data());
    return c;
  }

  // [start, end) of an arena's heap; top is the arena's top chunk when it
  // lies in this range (0 for an arena's older heaps, which end in a
  // fencepost and a zero header instead).
  struct Region {
    uint64_t start, end, top;
  };
  void AddRegion(uint64_t start, uint64_t end, uint64_t top, bool main) {
    ++heaps_;
    arena_ranges_.push_back({start, main ? end : HeapFor(start) + kHeapMaxSize});
    regions_.push_back({start, end, top});
  }

  // The chunks of a region by size, recorded, or only counted (so that the
  // table is allocated once, at the size the image's own headers prove).
  size_t WalkRegion(const Region& r, bool count_only) {
    size_t count = 0;
    size_t pending = SIZE_MAX;  // the chunk whose state its successor's header tells
    uint64_t p = r.start;
    uint64_t mapped_end = p;  // the end of the image's bytes from p on, found when needed
    while (p < r.end) {
      uint64_t prev_size = 0, head = 0;
      if (!win_.Word(p, &prev_size) || !win_.Word(p + 8, &head)) {
        if (!count_only) Damage(p, "chunk header unreadable");
        return count;
      }
      if (pending != SIZE_MAX) {
        GlibcChunk& c = out_.chunks[pending];
        if (!(head & kPrevInuse)) {
          c.state = ChunkState::kFreeUnlisted;
          if (prev_size != c.size) Damage(c.addr, "free chunk's size disagrees with its successor's prev_size");
        }
        pending = SIZE_MAX;
      }
      const uint64_t size = ChunkSize(head);
      if (p == r.top) {
        if (count_only) return count + 1;
        if (size > r.end - p) Damage(p, "top chunk's size " + Hex(size) + " past its heap");
        out_.chunks.push_back({p, size, ChunkState::kTop});
        top_bytes_ += size;
        walked_bytes_ += size;
        return count + 1;
      }
      if (size == 0 && r.top == 0) return count;  // an older heap's closing fencepost
      if (size < kChunkHeader || size % kAlignment != 0 || size > r.end - p) {
        if (!count_only) Damage(p, "chunk size " + Hex(size) + (size > r.end - p ? " past its heap" : " impossible"));
        return count;
      }
      // 16 bytes: a fencepost, no block (overhead, as mallinfo2 counts it).
      if (size >= kMinChunk) {
        // A block's usable bytes run into its successor's prev_size, so the
        // chunk and those 8 bytes must be in the image (a sound heap always
        // has top or a fencepost after them).
        auto fits = [&] { return p < mapped_end && size + 8 <= mapped_end - p; };
        if (!fits() && (mapped_end = MappedEnd(p), !fits())) {
          if (!count_only) Damage(p, "chunk size " + Hex(size) + " runs past its mapping");
          return count;
        }
        ++count;
        if (!count_only) {
          pending = out_.chunks.size();
          out_.chunks.push_back({p, size, ChunkState::kInUse});
          walked_bytes_ += size;
        }
      }
      p += size;
    }
    if (r.top != 0 && !count_only) Damage(p, "chunks of the heap do not end at its top chunk " + Hex(r.top));
    return count;
  }

  // Where the image's readable bytes from addr on end: its mapping, and the
  // present mappings that follow it without a gap (a heap can span several
  // when parts of it differ in protection or advice).
  uint64_t MappedEnd(uint64_t addr) const {
    const ImageMapping* m = image_.FindMapping(addr);
    if (m == nullptr || !m->present) return addr;
    const auto& ms = image_.Mappings();
    uint64_t end = m->end;
    for (size_t k = static_cast<size_t>(m - ms.data()) + 1; k < ms.size() && ms[k].start == end && ms[k].present; ++k)
      end = ms[k].end;
    return end;
  }

  void WalkArenaHeaps(uint64_t arena) {
    MallocState s;
    if (!image_.ReadValue(arena, &s)) return;
    system_mem_ += s.system_mem;
    uint64_t top_head = 0;
    win_.Word(s.top + 8, &top_head);
    const uint64_t top_end = s.top + ChunkSize(top_head);
    if (arena == out_.main_arena) {
      const ImageMapping* m = image_.FindMapping(s.top);
      if (m == nullptr) return;
      // A contiguous main arena took system_mem bytes from sbrk_base on.
      uint64_t start = top_end - s.system_mem;
      if (s.system_mem > top_end || start < m->start || start > s.top) {
        start = mp_.sbrk_base >= m->start && mp_.sbrk_base <= s.top ? mp_.sbrk_base : m->start;
        Damage(arena, "main arena's heap does not end at top + system_mem: walked from " + Hex(start));
      }
      if (s.flags & kNonContiguous) Damage(arena, "main arena is not contiguous: only the range of its top walked");
      first_chunks_.push_back((start + kAlignment - 1) & ~(kAlignment - 1));
      AddRegion(first_chunks_.back(), top_end, s.top, true);
      return;
    }
    // The newest heap holds top; heap_info.prev leads back to the first,
    // which holds the arena itself.
    std::unordered_set<uint64_t> seen;
    for (uint64_t h = HeapFor(s.top); h != 0;) {
      HeapInfo hi;
      if (!seen.insert(h).second) {
        Damage(h, "heap_info.prev loops");
        return;
      }
      if (!image_.ReadValue(h, &hi) || hi.ar_ptr != arena || hi.size > kHeapMaxSize || hi.size < sizeof(HeapInfo)) {
        Damage(h, "heap_info of arena " + Hex(arena) + " does not point back to it");
        return;
      }
      const bool first = h == HeapFor(arena);
      if (first) first_chunks_.push_back(FirstChunkOfArena(arena));
      AddRegion(first ? FirstChunkOfArena(arena) : h + sizeof(HeapInfo), h + hi.size, h == HeapFor(s.top) ? s.top : 0,
                false);
      if (first) return;
      if (hi.prev % kHeapMaxSize != 0) {
        Damage(h, "heap_info.prev " + Hex(hi.prev) + " is not a heap");
        return;
      }
      h = hi.prev;
    }
    Damage(arena, "heap_info chain of arena ends before the heap holding the arena");
  }

  // Heaps of a sound image never overlap; in a damaged one two arenas can
  // claim the same memory. The first claim is kept, so blocks stay disjoint.
  void DropOverlaps() {
    auto& cs = out_.chunks;
    size_t kept = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      if (kept > 0 && cs[kept - 1].addr + cs[kept - 1].size > cs[i].addr) {
        Damage(cs[i].addr, "chunk overlaps the chunk at " + Hex(cs[kept - 1].addr) + " of another heap");
        continue;
      }
      cs[kept++] = cs[i];
    }
    cs.resize(kept);
  }

  bool InArenaRange(uint64_t a) const {
    for (const auto& [s, e] : arena_ranges_)
      if (a >= s && a < e) return true;
    return false;
  }

  // mmapped chunks: their own anonymous mappings, one or several back to back
  // (the kernel merges neighbours), each starting on a page with prev_size 0
  // and a page-multiple size with IS_MMAPPED. memalign moves the chunk
  // forward by a lead it records in prev_size.
  std::vector<GlibcChunk> WalkMmapped() {
    std::vector<GlibcChunk> out;
    std::vector<uint64_t> sps;
    for (const auto& t : image_.Threads()) sps.push_back(t.sp());
    for (const ImageMapping& m : image_.Mappings()) {
      if (!m.present || !m.readable || !m.writable || !m.IsAnonymous() || m.path == "[stack]" || m.path == "[vvar]" ||
          m.path == "[vdso]" || m.path == "[vsyscall]")
        continue;
      if (std::any_of(sps.begin(), sps.end(), [&](uint64_t sp) { return sp >= m.start && sp < m.end; })) continue;
      for (uint64_t pos = m.start & ~(kPage - 1); pos + kPage <= m.end;) {
        if (InArenaRange(pos)) {
          pos += kPage;
          continue;
        }
        uint64_t hdr[2];
        if (!image_.ReadValue(pos, &hdr) || hdr[0] != 0 || (hdr[1] & kSizeBits) != kIsMmapped ||
            ChunkSize(hdr[1]) % kPage != 0 || ChunkSize(hdr[1]) == 0 || ChunkSize(hdr[1]) > m.end - pos) {
          pos += kPage;
          continue;
        }
        const uint64_t total = ChunkSize(hdr[1]);
        uint64_t chunk = pos;
        for (uint64_t align = 32; align <= (1ull << 30) && align < total; align <<= 1) {
          uint64_t lead = ((pos + kChunkHeader + align - 1) & ~(align - 1)) - kChunkHeader - pos;
          if (lead < kMinChunk) lead += align;
          uint64_t h2[2];
          if (lead + kMinChunk <= total && image_.ReadValue(pos + lead, &h2) && h2[0] == lead &&
              h2[1] == ((total - lead) | kIsMmapped)) {
            chunk = pos + lead;
            break;
          }
        }
        out.push_back({chunk, total - (chunk - pos), ChunkState::kMmapped});
        ++mmapped_;
        mmapped_bytes_ += total;
        pos += total;
      }
    }
    if (mp_.sbrk_base != 0 && (static_cast<uint64_t>(mp_.n_mmaps) != mmapped_ || mp_.mmapped_mem != mmapped_bytes_)) {
      Damage(out_.mp, "mmapped chunks found " + std::to_string(mmapped_) + " of " + std::to_string(mmapped_bytes_) +
                          " bytes, mp_ counts " + std::to_string(mp_.n_mmaps) + " of " +
                          std::to_string(mp_.mmapped_mem));
    }
    return out;
  }

  // Marks the chunk at p as sitting in a list; false (with damage) when it
  // cannot be there.
  bool Enlist(uint64_t p, uint64_t size, ChunkState as, const std::string& list) {
    GlibcChunk* c = Chunk(p);
    if (c == nullptr) {
      Damage(p, list + " links to " + Hex(p) + ", which is not a chunk");
      return false;
    }
    if (c->size != size) {
      Damage(p, list + " holds a chunk of size " + Hex(c->size) + ", not " + Hex(size));
      return false;
    }
    if (c->state != ChunkState::kInUse) {
      Damage(p, list + (c->state == as ? " loops or shares a chunk with another list" : " holds a free chunk"));
      return false;
    }
    c->state = as;
    return true;
  }

  // The links of free lists are read one by one, not through the window:
  // lists jump about the heap, and each refill would copy 64 KiB for 8 bytes.
  void WalkFastbins(uint64_t arena) {
    MallocState s;
    if (!image_.ReadValue(arena, &s)) return;
    for (int i = 0; i < kFastBins; ++i) {
      const std::string list = "fastbin " + std::to_string(i) + " of arena " + Hex(arena);
      for (uint64_t p = s.fastbins[i], n = 0; p != 0; ++n) {
        if (n > out_.chunks.size() || !Enlist(p, TcacheBinSize(i), ChunkState::kFastbin, list)) break;
        uint64_t stored = 0;
        if (!image_.ReadValue(p + kChunkHeader, &stored)) break;
        p = Reveal(p + kChunkHeader, stored);
      }
    }
  }

  // Whether the struct at user address t reads as a tcache: every list as
  // long as its count, through in-use chunks of its bin's size sharing one key.
  bool TcacheConsistent(uint64_t t, bool* any) {
    TcachePerthread tc;
    if (!image_.ReadValue(t, &tc)) return false;
    std::optional<uint64_t> key;
    *any = false;
    for (int i = 0; i < kTcacheBins; ++i) {
      uint64_t e = tc.entries[i];
      for (int n = 0; n < tc.counts[i]; ++n) {
        const GlibcChunk* c = out_.Find(e - kChunkHeader);
        TcacheEntry entry;
        if (e % kAlignment != 0 || c == nullptr || c->size != TcacheBinSize(i) || c->state != ChunkState::kInUse ||
            !image_.ReadValue(e, &entry) || (key && *key != entry.key))
          return false;
        key = entry.key;
        e = Reveal(e, entry.next);
      }
      if (e != 0) return false;
      *any |= tc.counts[i] != 0;
    }
    return true;
  }

  void WalkTcache(uint64_t t) {
    TcachePerthread tc;
    if (!image_.ReadValue(t, &tc)) return;
    out_.tcaches.push_back(t);
    for (int i = 0; i < kTcacheBins; ++i) {
      const std::string list = "tcache bin " + std::to_string(i) + " of " + Hex(t);
      int n = 0;
      bool broken = false;
      uint64_t stored = 0;
      for (uint64_t e = tc.entries[i]; e != 0 && n <= tc.counts[i]; ++n) {
        if (!Enlist(e - kChunkHeader, TcacheBinSize(i), ChunkState::kTcache, list) || !image_.ReadValue(e, &stored)) {
          broken = true;
          break;
        }
        e = Reveal(e, stored);
      }
      if (!broken && n != tc.counts[i]) {
        Damage(t, list + " has " + std::to_string(n) + " entries, its count says " + std::to_string(tc.counts[i]));
      }
    }
  }

  // Each thread's `tcache` through its thread pointer and libc's GOT slots;
  // then any in-use chunk of the struct's size that reads as one (threads
  // the image does not list, images without thread pointers).
  void FindTcaches(const ArenaRoots& roots) {
    std::vector<uint64_t> found;
    for (int64_t tpoff : roots.tcache_tpoffs) {
      for (const auto& th : image_.Threads()) {
        uint64_t t = 0;
        bool any = false;
        if (th.fs_base() == 0 || !image_.ReadValue(th.fs_base() + tpoff, &t) || t == 0) continue;
        const GlibcChunk* c = out_.Find(t - kChunkHeader);
        if (c == nullptr || c->size != kTcacheChunk || c->state != ChunkState::kInUse) continue;
        if (roots.tcache_tpoffs.size() > 1 && !TcacheConsistent(t, &any)) continue;
        found.push_back(t);
      }
    }
    tcaches_by_tls_ = found.size();
    // Each arena's first chunk is the tcache of the thread that made it:
    // walked, damage listed, when its counts are within malloc's limit.
    const uint64_t limit = mp_.tcache_count != 0 ? mp_.tcache_count : 7;
    for (uint64_t first : first_chunks_) {
      const GlibcChunk* c = out_.Find(first);
      TcachePerthread tc;
      if (c == nullptr || c->size != kTcacheChunk || c->state != ChunkState::kInUse ||
          !image_.ReadValue(first + kChunkHeader, &tc))
        continue;
      bool plausible = true;
      for (int i = 0; i < kTcacheBins; ++i)
        plausible &= tc.counts[i] <= limit && (tc.counts[i] == 0) == (tc.entries[i] == 0) &&
                     tc.entries[i] % kAlignment == 0;
      if (plausible) found.push_back(first + kChunkHeader);
    }
    for (const GlibcChunk& c : out_.chunks) {
      bool any = false;
      if (c.size == kTcacheChunk && c.state == ChunkState::kInUse && TcacheConsistent(c.addr + kChunkHeader, &any) &&
          any)
        found.push_back(c.addr + kChunkHeader);
    }
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    for (uint64_t t : found) WalkTcache(t);
  }

  void WalkBins(uint64_t arena) {
    MallocState s;
    if (!image_.ReadValue(arena, &s)) return;
    for (int i = 1; i < kBins; ++i) {
      const uint64_t head = BinAt(arena, i);
      const ChunkState as =
          i == 1 ? ChunkState::kUnsorted : i < kSmallBinLimit ? ChunkState::kSmallBin : ChunkState::kLargeBin;
      uint64_t p = s.bins[2 * (i - 1)];
      for (uint64_t n = 0; p != head; ++n) {
        GlibcChunk* c = Chunk(p);
        if (n > out_.chunks.size() || c == nullptr || c->state != ChunkState::kFreeUnlisted) {
          Damage(p, "bin " + std::to_string(i) + " of arena " + Hex(arena) +
                        (c == nullptr ? " links to a non-chunk"
                                      : c->state == as ? " loops" : " holds a chunk that is not free"));
          break;
        }
        c->state = as;
        if (!image_.ReadValue(p + kChunkHeader, &p)) break;
      }
    }
  }

  void Finish() {
    HeapWalk& w = out_.walk;
    uint64_t in_use_chunk = 0;
    std::vector<uint64_t> free_count(9), free_bytes(9);
    w.blocks.reserve(std::count_if(out_.chunks.begin(), out_.chunks.end(), [](const GlibcChunk& c) {
      return c.state == ChunkState::kInUse || c.state == ChunkState::kMmapped;
    }));
    for (const GlibcChunk& c : out_.chunks) {
      if (c.state == ChunkState::kInUse || c.state == ChunkState::kMmapped) {
        const uint64_t usable = c.size - (c.state == ChunkState::kMmapped ? kChunkHeader : 8);
        w.blocks.push_back({c.addr + kChunkHeader, usable});
        w.live_bytes += usable;
        if (c.state == ChunkState::kInUse) in_use_chunk += c.size;
      } else if (IsFree(c.state)) {
        ++w.free_blocks;
        w.free_bytes += c.size;
        ++free_count[static_cast<int>(c.state)];
        free_bytes[static_cast<int>(c.state)] += c.size;
      }
    }
    for (ChunkState s : {ChunkState::kTcache, ChunkState::kFastbin, ChunkState::kUnsorted, ChunkState::kSmallBin,
                         ChunkState::kLargeBin, ChunkState::kFreeUnlisted}) {
      w.free_by_list.emplace_back(std::string(ChunkStateName(s)), free_count[static_cast<int>(s)]);
    }
    auto bytes = [&](ChunkState s) { return free_bytes[static_cast<int>(s)]; };
    w.stats = {
        {"arenas", out_.arenas.size()},
        {"heaps", heaps_},
        {"tcaches", out_.tcaches.size()},
        {"tcaches_by_thread_pointer", tcaches_by_tls_},
        {"system_mem", system_mem_},
        {"top_bytes", top_bytes_},
        {"in_use_blocks", w.blocks.size() - mmapped_},
        {"in_use_chunk_bytes", in_use_chunk},
        {"mmapped_blocks", mmapped_},
        {"mmapped_bytes", mmapped_bytes_},
        {"tcache_bytes", bytes(ChunkState::kTcache)},
        {"fastbin_bytes", bytes(ChunkState::kFastbin)},
        {"bin_bytes", bytes(ChunkState::kUnsorted) + bytes(ChunkState::kSmallBin) + bytes(ChunkState::kLargeBin) +
                          bytes(ChunkState::kFreeUnlisted)},
        // What the arenas took from the system that no chunk covers:
        // heap_info, the malloc_state of thread arenas, fenceposts.
        {"arena_overhead_bytes", system_mem_ > walked_bytes_ ? system_mem_ - walked_bytes_ : 0},
    };
    if (out_.mp != 0) {
      w.stats.emplace_back("mp_.n_mmaps", static_cast<uint64_t>(mp_.n_mmaps));
      w.stats.emplace_back("mp_.mmapped_mem", mp_.mmapped_mem);
    }
    if (damage_left_off_ > 0) w.damage.push_back({0, std::to_string(damage_left_off_) + " more damaged places"});
  }

  const ProcessImage& image_;
  const GlibcOptions& options_;
  ImageWindow win_;
  GlibcHeap out_;
  MallocPar mp_{};
  std::vector<std::pair<uint64_t, uint64_t>> arena_ranges_;
  std::vector<uint64_t> first_chunks_;
  std::vector<Region> regions_;
  uint64_t heaps_ = 0, walked_bytes_ = 0, top_bytes_ = 0, system_mem_ = 0;
  uint64_t mmapped_ = 0, mmapped_bytes_ = 0, tcaches_by_tls_ = 0;
  size_t damage_left_off_ = 0;
  size_t hint_ = 0;
};

}  // namespace

std::string_view ChunkStateName(ChunkState s) {
  switch (s) {
    case ChunkState::kInUse: return "in use";
    case ChunkState::kMmapped: return "mmapped";
    case ChunkState::kTcache: return "tcache";
    case ChunkState::kFastbin: return "fastbin";
    case ChunkState::kUnsorted: return "unsorted";
    case ChunkState::kSmallBin: return "smallbin";
    case ChunkState::kLargeBin: return "largebin";
    case ChunkState::kFreeUnlisted: return "free in no bin";
    case ChunkState::kTop: return "top";
  }
  return "?";
}

const GlibcChunk* GlibcHeap::Find(uint64_t addr) const {
  auto it = std::lower_bound(chunks.begin(), chunks.end(), addr,
                             [](const GlibcChunk& c, uint64_t a) { return c.addr < a; });
  return it != chunks.end() && it->addr == addr ? &*it : nullptr;
}

bool GlibcWalker::Recognise(const procimage::ProcessImage& image, std::string* why) const {
  ArenaRoots roots = FindArenaRoots(image, options_);
  if (why) *why = roots.found_by;
  return roots.main_arena != 0;
}

GlibcHeap GlibcWalker::Inspect(const procimage::ProcessImage& image) const { return Walker(image, options_).Run(); }

}  // namespace libdump::heapwalk
