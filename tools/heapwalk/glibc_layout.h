// glibc 2.36's malloc structures on x86-64 (Debian 12), as the walker reads
// them out of another process's memory. The offsets are those of
// malloc/malloc.c and malloc/arena.c of that release; the static_asserts pin
// the sizes the walker's arithmetic depends on (a chunk of the tcache struct
// is 0x290 bytes, the first chunk of a thread's heap starts 0x8d0 bytes in).
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::heapwalk::glibc {

// A chunk's header: the size of the chunk before it (valid only when that
// one is free) and its own size, whose low three bits are flags.
struct MallocChunk {
  uint64_t prev_size;
  uint64_t size;
  uint64_t fd, bk;                    // free chunks only
  uint64_t fd_nextsize, bk_nextsize;  // free large chunks only
};
constexpr uint64_t kPrevInuse = 1, kIsMmapped = 2, kNonMainArena = 4, kSizeBits = 7;
constexpr uint64_t kChunkHeader = 16;  // prev_size + size: user memory starts here
constexpr uint64_t kAlignment = 16, kMinChunk = 32;
constexpr uint64_t ChunkSize(uint64_t head) { return head & ~kSizeBits; }

constexpr int kFastBins = 10;
constexpr int kBins = 128;  // bin 0 does not exist, 1 is the unsorted bin
constexpr int kSmallBinLimit = 64;  // bins 2..63 hold one size each, 64..126 ranges
struct MallocState {
  int32_t mutex;
  int32_t flags;
  int32_t have_fastchunks;
  int32_t hole;
  uint64_t fastbins[kFastBins];
  uint64_t top;
  uint64_t last_remainder;
  uint64_t bins[kBins * 2 - 2];
  uint32_t binmap[4];
  uint64_t next;
  uint64_t next_free;
  uint64_t attached_threads;
  uint64_t system_mem;
  uint64_t max_system_mem;
};
static_assert(sizeof(MallocState) == 0x898);
static_assert(offsetof(MallocState, top) == 96);
static_assert(offsetof(MallocState, bins) == 112);
static_assert(offsetof(MallocState, next) == 2160);
static_assert(offsetof(MallocState, system_mem) == 2184);
constexpr uint64_t kNonContiguous = 2;  // MallocState::flags: main arena not one brk range

// The address malloc treats as bin i's list head: a fake chunk whose fd/bk
// are bins[2(i-1)] and bins[2(i-1)+1].
constexpr uint64_t BinAt(uint64_t arena, int i) {
  return arena + offsetof(MallocState, bins) + static_cast<uint64_t>(i - 1) * 16 - 16;
}
// The fastbin a chunk of this size goes to (chunk size 32 is bin 0).
constexpr int FastbinIndex(uint64_t size) { return static_cast<int>((size >> 4) - 2); }

// At the start of every heap of a non-main arena; heaps are HEAP_MAX_SIZE
// aligned so that heap_for_ptr is a mask.
struct HeapInfo {
  uint64_t ar_ptr;
  uint64_t prev;
  uint64_t size;
  uint64_t mprotect_size;
  uint64_t pagesize;
  uint8_t pad[8];
};
static_assert(sizeof(HeapInfo) == 48);
constexpr uint64_t kHeapMaxSize = 64ull << 20;  // 2 * DEFAULT_MMAP_THRESHOLD_MAX on 64 bits
constexpr uint64_t HeapFor(uint64_t addr) { return addr & ~(kHeapMaxSize - 1); }
// A thread arena's first heap: heap_info, the malloc_state, then chunks from
// the next address whose user pointer is 16-aligned.
constexpr uint64_t FirstChunkOfArena(uint64_t arena) {
  const uint64_t p = arena + sizeof(MallocState);
  return (p + kChunkHeader + kAlignment - 1) / kAlignment * kAlignment - kChunkHeader;
}
static_assert(FirstChunkOfArena(sizeof(HeapInfo)) == 0x8d0);

constexpr int kTcacheBins = 64;
struct TcachePerthread {
  uint16_t counts[kTcacheBins];
  uint64_t entries[kTcacheBins];  // user pointers, not mangled
};
static_assert(sizeof(TcachePerthread) == 640);
// The chunk malloc gives the struct: request 640 rounded up with the header.
constexpr uint64_t kTcacheChunk = (sizeof(TcachePerthread) + 8 + kAlignment - 1) / kAlignment * kAlignment;
static_assert(kTcacheChunk == 0x290);
// Chunk size of tcache bin i (csize2tidx's inverse).
constexpr uint64_t TcacheBinSize(int i) { return kMinChunk + static_cast<uint64_t>(i) * kAlignment; }

struct TcacheEntry {
  uint64_t next;  // mangled
  uint64_t key;   // tcache_key, the same in every entry of the process
};

// Safe-linking (2.32+): a link stored at pos holds (pos >> 12) ^ target.
constexpr uint64_t Reveal(uint64_t pos, uint64_t stored) { return (pos >> 12) ^ stored; }

// mp_, malloc's parameters and counters.
struct MallocPar {
  uint64_t trim_threshold, top_pad, mmap_threshold, arena_test, arena_max;
  uint64_t thp_pagesize, hp_pagesize;
  int32_t hp_flags, n_mmaps, n_mmaps_max, max_n_mmaps, no_dyn_threshold, hole;
  uint64_t mmapped_mem, max_mmapped_mem;
  uint64_t sbrk_base;
  uint64_t tcache_bins, tcache_max_bytes, tcache_count, tcache_unsorted_limit;
};
static_assert(sizeof(MallocPar) == 136);
static_assert(offsetof(MallocPar, n_mmaps) == 60);
static_assert(offsetof(MallocPar, sbrk_base) == 96);

}  // namespace libdump::heapwalk::glibc
