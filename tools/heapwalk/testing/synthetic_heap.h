// A small glibc heap built by hand in a SyntheticImage: main_arena in a
// libc's data, a brk heap holding the tcache struct, chunks in use, one in
// the tcache, one in a fastbin, one in the unsorted bin, the top chunk, and
// one mmapped chunk; and a thread arena whose one heap holds heap_info, the
// arena, its thread's tcache struct, a chunk in use and its top. Tests and
// the fuzz target damage it from there.
#pragma once

#include "glibc_layout.h"
#include "synthetic_image.h"

namespace libdump::heapwalk::testing {

struct SyntheticHeap {
  static constexpr uint64_t kLibc = 0x7f0000000000, kArena = kLibc + 0x1000;
  static constexpr uint64_t kHeap = 0x555500000000, kHeapSize = 0x10000;
  static constexpr uint64_t kMmap = 0x7e0000000000, kMmapSize = 0x21000;
  // Chunks, in address order after the tcache struct at kHeap.
  static constexpr uint64_t kA = kHeap + glibc::kTcacheChunk;  // 0x20 in use
  static constexpr uint64_t kTcached = kA + 0x20;                // 0x20 in tcache bin 0
  static constexpr uint64_t kFast = kTcached + 0x20;             // 0x20 in fastbin 0
  static constexpr uint64_t kC = kFast + 0x20;                   // 0x30 in use
  static constexpr uint64_t kFree = kC + 0x30;                   // 0x100 in the unsorted bin
  static constexpr uint64_t kE = kFree + 0x100;                  // 0x40 in use
  static constexpr uint64_t kTop = kE + 0x40;
  static constexpr uint64_t kKey = 0x1234567890abcdef;
  // The thread arena's heap, HEAP_MAX_SIZE aligned.
  static constexpr uint64_t kThreadHeap = 0x7d0000000000, kThreadHeapSize = 0x4000;
  static constexpr uint64_t kThreadArena = kThreadHeap + sizeof(glibc::HeapInfo);
  static constexpr uint64_t kThreadTcache = glibc::FirstChunkOfArena(kThreadArena);
  static constexpr uint64_t kThreadChunk = kThreadTcache + glibc::kTcacheChunk;  // 0x40 in use
  static constexpr uint64_t kThreadTop = kThreadChunk + 0x40;

  SyntheticImage image;

  SyntheticHeap() {
    using namespace glibc;
    image.AddMapping(kLibc, std::vector<uint8_t>(0x4000), "/synthetic/libc.so.6");
    image.AddMapping(kHeap, std::vector<uint8_t>(kHeapSize), "[heap]");
    image.AddMapping(kMmap, std::vector<uint8_t>(kMmapSize), "");
    image.AddMapping(kThreadHeap, std::vector<uint8_t>(kThreadHeapSize), "");
    procimage::ImageModule libc;
    libc.path = "/synthetic/libc.so.6";
    libc.start = kLibc, libc.end = kLibc + 0x4000;
    image.AddModule(libc);

    MallocState a{};
    a.top = kTop;
    a.system_mem = kHeapSize;
    a.next = kThreadArena;
    for (int i = 1; i < kBins; ++i) a.bins[2 * (i - 1)] = a.bins[2 * (i - 1) + 1] = BinAt(kArena, i);
    a.bins[0] = a.bins[1] = kFree;
    a.fastbins[0] = kFast;
    image.Put(kArena, a);

    Chunk(kHeap, kTcacheChunk, true);
    Chunk(kA, 0x20, true);
    Chunk(kTcached, 0x20, true);
    Chunk(kFast, 0x20, true);
    Chunk(kC, 0x30, true);
    Chunk(kFree, 0x100, true);
    Chunk(kE, 0x40, false);  // kFree is free
    image.Put(kE, uint64_t{0x100});
    image.Put(kFree + 16, BinAt(kArena, 1));
    image.Put(kFree + 24, BinAt(kArena, 1));
    Chunk(kTop, kHeap + kHeapSize - kTop, true);
    image.Put(kFast + 16, Reveal(kFast + 16, 0));
    TcachePerthread t{};
    t.counts[0] = 1;
    t.entries[0] = kTcached + 16;
    image.Put(kHeap + 16, t);
    image.Put(kTcached + 16, TcacheEntry{Reveal(kTcached + 16, 0), kKey});
    image.Put(kMmap + 8, kMmapSize | kIsMmapped);

    HeapInfo hi{};
    hi.ar_ptr = kThreadArena;
    hi.size = hi.mprotect_size = kThreadHeapSize;
    image.Put(kThreadHeap, hi);
    MallocState t_arena{};
    t_arena.top = kThreadTop;
    t_arena.system_mem = kThreadHeapSize;
    t_arena.next = kArena;
    for (int i = 1; i < kBins; ++i)
      t_arena.bins[2 * (i - 1)] = t_arena.bins[2 * (i - 1) + 1] = BinAt(kThreadArena, i);
    image.Put(kThreadArena, t_arena);
    Chunk(kThreadTcache, kTcacheChunk | kNonMainArena, true);
    Chunk(kThreadChunk, 0x40 | kNonMainArena, true);
    Chunk(kThreadTop, (kThreadHeap + kThreadHeapSize - kThreadTop) | kNonMainArena, true);
  }
  void Chunk(uint64_t at, uint64_t size, bool prev_inuse) { image.Put(at + 8, size | (prev_inuse ? kPrevInuseBit : 0)); }
  static constexpr uint64_t kPrevInuseBit = glibc::kPrevInuse;
};

}  // namespace libdump::heapwalk::testing
