// What a test program knows of its own heap (testing/known_heap.h) and the
// checks of a walk against it: every live block found with its
// malloc_usable_size, no freed block live and each in the list it was freed
// to, and mallinfo2's figures to the byte.
#pragma once

#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "glibc_layout.h"
#include "glibc_walker.h"
#include "known_heap.h"

namespace libdump::heapwalk::testing {

struct HeapReport {
  std::vector<std::pair<uint64_t, uint64_t>> live;  // user address, malloc_usable_size
  std::vector<uint64_t> tcache, fastbin, bin;
  struct mallinfo2 info {};
  size_t threads = 0;  // threads that made a KnownHeap

  void Add(const KnownHeap& k) {
    for (void* p : k.live) live.emplace_back(reinterpret_cast<uint64_t>(p), malloc_usable_size(p));
    for (void* p : k.tcache) tcache.push_back(reinterpret_cast<uint64_t>(p));
    for (void* p : k.fastbin) fastbin.push_back(reinterpret_cast<uint64_t>(p));
    for (void* p : k.bin) bin.push_back(reinterpret_cast<uint64_t>(p));
    ++threads;
  }
  // The lines the heap target prints ("live ADDR SIZE", "tcache ADDR", ...,
  // "mallinfo ARENA ORDBLKS SMBLKS HBLKS HBLKHD FSMBLKS UORDBLKS FORDBLKS").
  static HeapReport Parse(const std::string& text) {
    HeapReport r;
    std::istringstream in(text);
    std::string kind;
    while (in >> kind) {
      uint64_t a = 0, b = 0;
      if (kind == "live" && in >> std::hex >> a >> std::dec >> b) r.live.emplace_back(a, b);
      if ((kind == "tcache" || kind == "fastbin" || kind == "bin") && in >> std::hex >> a >> std::dec)
        (kind == "tcache" ? r.tcache : kind == "fastbin" ? r.fastbin : r.bin).push_back(a);
      if (kind == "threads") in >> r.threads;
      if (kind == "mallinfo")
        in >> r.info.arena >> r.info.ordblks >> r.info.smblks >> r.info.hblks >> r.info.hblkhd >> r.info.fsmblks >>
            r.info.uordblks >> r.info.fordblks;
    }
    return r;
  }
};

inline uint64_t Stat(const HeapWalk& w, const std::string& name) {
  for (const auto& [n, v] : w.stats)
    if (n == name) return v;
  ADD_FAILURE() << "no stat " << name;
  return 0;
}
inline uint64_t FreeCount(const HeapWalk& w, const std::string& name) {
  for (const auto& [n, v] : w.free_by_list)
    if (n == name) return v;
  ADD_FAILURE() << "no list " << name;
  return 0;
}

inline const LiveBlock* FindBlock(const HeapWalk& w, uint64_t a) {
  auto it = std::lower_bound(w.blocks.begin(), w.blocks.end(), a,
                             [](const LiveBlock& b, uint64_t x) { return b.addr < x; });
  return it != w.blocks.end() && it->addr == a ? &*it : nullptr;
}

inline void ExpectKnownBlocks(const GlibcHeap& heap, const HeapReport& r) {
  const HeapWalk& w = heap.walk;
  EXPECT_EQ(r.live.size(), r.threads * kLivePerThread);
  EXPECT_EQ(r.tcache.size() + r.fastbin.size() + r.bin.size(), r.threads * kFreedPerThread);
  size_t found = 0;
  for (const auto& [p, usable] : r.live) {
    const LiveBlock* b = FindBlock(w, p);
    EXPECT_NE(b, nullptr) << std::hex << p;
    if (b == nullptr) continue;
    EXPECT_EQ(b->size, usable) << std::hex << p;
    ++found;
  }
  EXPECT_EQ(found, r.live.size());
  auto expect_state = [&](const std::vector<uint64_t>& ps, std::set<ChunkState> states) {
    for (uint64_t p : ps) {
      EXPECT_EQ(FindBlock(w, p), nullptr) << std::hex << p << " was freed";
      const GlibcChunk* c = heap.Find(p - glibc::kChunkHeader);
      ASSERT_NE(c, nullptr) << std::hex << p;
      EXPECT_TRUE(states.count(c->state)) << std::hex << p << " is " << ChunkStateName(c->state);
    }
  };
  expect_state(r.tcache, {ChunkState::kTcache});
  expect_state(r.fastbin, {ChunkState::kFastbin});
  expect_state(r.bin, {ChunkState::kUnsorted, ChunkState::kSmallBin, ChunkState::kLargeBin});
  for (size_t i = 1; i < w.blocks.size(); ++i)
    ASSERT_LE(w.blocks[i - 1].addr + w.blocks[i - 1].size, w.blocks[i].addr) << "blocks overlap or are unsorted";
}

// mallinfo2 walks the same arenas from inside the process: its figures must
// be the walk's to the byte. uordblks counts tcache'd chunks as in use and
// includes what no chunk covers, which is known exactly: each thread arena's
// heap_info and malloc_state (its first chunk starts 0x8d0 bytes into its
// heap) and, for each further heap of an arena, its heap_info (0x30) and the
// two 16-byte fenceposts sysmalloc leaves at the end of the heap before it.
inline void ExpectMallinfo(const GlibcHeap& heap, const struct mallinfo2& mi) {
  const HeapWalk& w = heap.walk;
  const uint64_t arenas = Stat(w, "arenas"), heaps = Stat(w, "heaps");
  EXPECT_EQ(mi.arena, Stat(w, "system_mem"));
  EXPECT_EQ(mi.hblks, Stat(w, "mmapped_blocks"));
  EXPECT_EQ(mi.hblkhd, Stat(w, "mmapped_bytes"));
  EXPECT_EQ(mi.smblks, FreeCount(w, "fastbin"));
  EXPECT_EQ(mi.fsmblks, Stat(w, "fastbin_bytes"));
  EXPECT_EQ(FreeCount(w, "free in no bin"), 0u);
  EXPECT_EQ(mi.ordblks, arenas + FreeCount(w, "unsorted") + FreeCount(w, "smallbin") + FreeCount(w, "largebin"));
  EXPECT_EQ(mi.fordblks, Stat(w, "top_bytes") + Stat(w, "fastbin_bytes") + Stat(w, "bin_bytes"));
  EXPECT_EQ(mi.uordblks, Stat(w, "in_use_chunk_bytes") + Stat(w, "tcache_bytes") + Stat(w, "arena_overhead_bytes"));
  EXPECT_EQ(Stat(w, "arena_overhead_bytes"), (arenas - 1) * glibc::FirstChunkOfArena(sizeof(glibc::HeapInfo)) +
                                                 (heaps - arenas) * (sizeof(glibc::HeapInfo) + 2 * glibc::kChunkHeader));
}

inline void PrintFigures(const GlibcHeap& heap, const HeapReport& r) {
  const HeapWalk& w = heap.walk;
  std::printf("%s\nlive blocks %zu (%llu bytes), known live %zu all found; free %llu; arenas %llu, tcaches %llu "
              "(%llu by thread pointer); mallinfo2 uordblks %zu = in-use chunks %llu + tcache %llu + overhead %llu, "
              "hblkhd %zu = mmapped %llu\n",
              w.found_by.c_str(), w.blocks.size(), (unsigned long long)w.live_bytes, r.live.size(),
              (unsigned long long)w.free_blocks, (unsigned long long)Stat(w, "arenas"),
              (unsigned long long)Stat(w, "tcaches"), (unsigned long long)Stat(w, "tcaches_by_thread_pointer"),
              r.info.uordblks, (unsigned long long)Stat(w, "in_use_chunk_bytes"),
              (unsigned long long)Stat(w, "tcache_bytes"), (unsigned long long)Stat(w, "arena_overhead_bytes"),
              r.info.hblkhd, (unsigned long long)Stat(w, "mmapped_bytes"));
}

}  // namespace libdump::heapwalk::testing
