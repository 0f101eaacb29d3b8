// The glibc heap walker over a hand-made heap (tools/heapwalk/testing/
// synthetic_heap.h: main_arena, a brk heap with tcache, fastbin and unsorted
// chunks, an mmapped chunk, a thread arena's heap) patched by the input:
// records of a 4-byte offset into main_arena, brk heap, mmapped chunk and
// thread heap taken as one space, then the 8 bytes written there. Whatever the patches make of sizes, links and counts, the
// walk must end, without a sanitizer report, with blocks in address order
// and disjoint, each inside a mapping of the image.
#include <cstdint>
#include <cstring>

#include "glibc_walker.h"
#include "testing/synthetic_heap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using libdump::heapwalk::testing::SyntheticHeap;
  static const uint64_t kArenaSpace = sizeof(libdump::heapwalk::glibc::MallocState);
  static const uint64_t kMmapSpace = kArenaSpace + SyntheticHeap::kHeapSize;
  static const uint64_t kThreadSpace = kMmapSpace + SyntheticHeap::kMmapSize;
  static const uint64_t kSpace = kThreadSpace + SyntheticHeap::kThreadHeapSize;
  SyntheticHeap s;
  for (size_t at = 0; at + 12 <= size; at += 12) {
    uint32_t off;
    uint64_t value;
    std::memcpy(&off, data + at, 4);
    std::memcpy(&value, data + at + 4, 8);
    uint64_t pos = off % kSpace;
    if (pos < kArenaSpace) {
      pos += SyntheticHeap::kArena;
    } else if (pos < kMmapSpace) {
      pos += SyntheticHeap::kHeap - kArenaSpace;
    } else if (pos < kThreadSpace) {
      pos += SyntheticHeap::kMmap - kMmapSpace;
    } else {
      pos += SyntheticHeap::kThreadHeap - kThreadSpace;
    }
    s.image.Put(pos & ~uint64_t{7}, value);
  }
  // No symbols: the host's files are not the synthetic libc's.
  const libdump::heapwalk::GlibcHeap h = libdump::heapwalk::GlibcWalker({.debug_dirs = {}, .use_symbols = false}).Inspect(s.image);
  const auto& blocks = h.walk.blocks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto* m = s.image.FindMapping(blocks[i].addr);
    if (m == nullptr || blocks[i].size > m->end - blocks[i].addr) __builtin_trap();
    if (i > 0 && blocks[i - 1].addr + blocks[i - 1].size > blocks[i].addr) __builtin_trap();
  }
  return 0;
}
