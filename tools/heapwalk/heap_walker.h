// A heap walker finds one allocator's blocks in a process image: which are in
// use (each becomes an object of the dump) and which are free. One walker per
// allocator (glibc's ptmalloc today; jemalloc and tcmalloc would follow behind
// the same interface, docs/COREDUMP.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "process_image.h"

namespace libdump::heapwalk {

// A block in use: the address the program holds (malloc's return value) and
// its usable size (malloc_usable_size).
struct LiveBlock {
  uint64_t addr = 0;
  uint64_t size = 0;
};

// Something the walk could not follow: a chunk size past its heap, a loop in a
// free list, an arena that does not link back. The walk goes on around it.
struct HeapDamage {
  uint64_t addr = 0;
  std::string what;
};

struct HeapWalk {
  std::string allocator;   // "glibc 2.36 ptmalloc"
  std::string found_by;    // one line: how the allocator's roots were found
                           // ("main_arena from libc's .symtab", "main_arena by structure at 0x...")
  std::vector<LiveBlock> blocks;  // in address order, disjoint
  uint64_t live_bytes = 0;        // sum of blocks' sizes
  uint64_t free_blocks = 0, free_bytes = 0;
  // By where the free blocks sit: "tcache", "fastbin", "bin", "top", ...
  std::vector<std::pair<std::string, uint64_t>> free_by_list;
  // Statistics for the dump's memstats record, by name.
  std::vector<std::pair<std::string, uint64_t>> stats;
  std::vector<HeapDamage> damage;
  // Allocator state outside the heap, [start, end) (glibc's main_arena in
  // libc's data): not the program's roots. Its bins point at chunk headers,
  // and a chunk's header lies in the usable tail of the block before it.
  std::vector<std::pair<uint64_t, uint64_t>> not_roots;
};

class HeapWalker {
 public:
  virtual ~HeapWalker() = default;
  virtual std::string_view Name() const = 0;  // "glibc"
  // True when the image holds this allocator's heap; *why says in one line
  // what proved it (or what is missing).
  virtual bool Recognise(const procimage::ProcessImage& image, std::string* why) const = 0;
  virtual HeapWalk Walk(const procimage::ProcessImage& image) const = 0;
};

// Every walker, in the order they are tried.
std::vector<std::unique_ptr<HeapWalker>> AllWalkers();

// One line naming an allocator that replaces glibc's malloc in the image and
// that no walker reads yet ("the heap is jemalloc's (libjemalloc.so.2
// mapped): not walked yet"), "" when there is none.
std::string OtherAllocator(const procimage::ProcessImage& image);

}  // namespace libdump::heapwalk
