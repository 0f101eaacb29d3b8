// The heap walker of glibc's malloc (ptmalloc, glibc 2.36 on x86-64; layouts
// in glibc_layout.h). It finds main_arena from libc's symbols or, when there
// are none, by its structure in libc's data; the other arenas by their `next`
// list and their heaps by heap_info; walks each heap's chunks by size and
// takes mmapped chunks from the anonymous mappings that are no heap. A chunk
// is free when its successor's PREV_INUSE is clear or when it sits in a
// fastbin or a thread's tcache (those keep the bit set), so both kinds of
// list are walked, safe-linking decoded. Every walk is bounded: what does not
// add up is listed as damage and the walk goes on around it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "heap_walker.h"

namespace libdump::heapwalk {

struct GlibcOptions {
  // Where libc's debug file is looked for (DIR/.build-id/xx/yyyy.debug), in order.
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  // false: never read symbols, find main_arena and mp_ by structure.
  bool use_symbols = true;
};

enum class ChunkState : uint8_t {
  kInUse,
  kMmapped,
  kTcache,
  kFastbin,
  kUnsorted,
  kSmallBin,
  kLargeBin,
  kFreeUnlisted,  // free by its successor's PREV_INUSE, found in no bin
  kTop,
};
std::string_view ChunkStateName(ChunkState s);

struct GlibcChunk {
  uint64_t addr = 0;  // the chunk (user pointer less 16)
  uint64_t size = 0;  // chunksize()
  ChunkState state = ChunkState::kInUse;
};

// Everything the walk found, beyond the allocator-neutral HeapWalk.
struct GlibcHeap {
  HeapWalk walk;
  uint64_t main_arena = 0;
  uint64_t mp = 0;                 // mp_, 0 when not found
  std::vector<uint64_t> arenas;    // main_arena first, then the `next` list
  std::vector<uint64_t> tcaches;   // user addresses of the tcache structs walked
  std::vector<GlibcChunk> chunks;  // every chunk, in address order
  // The chunk starting at addr, or nullptr.
  const GlibcChunk* Find(uint64_t addr) const;
};

class GlibcWalker : public HeapWalker {
 public:
  explicit GlibcWalker(GlibcOptions options = {}) : options_(std::move(options)) {}
  std::string_view Name() const override { return "glibc"; }
  bool Recognise(const procimage::ProcessImage& image, std::string* why) const override;
  HeapWalk Walk(const procimage::ProcessImage& image) const override { return Inspect(image).walk; }
  GlibcHeap Inspect(const procimage::ProcessImage& image) const;

 private:
  GlibcOptions options_;
};

}  // namespace libdump::heapwalk
