// Where the glibc walker starts: main_arena (from libc's symbols or by its
// structure in libc's data, as chap does), the arena list, mp_, and the
// thread-pointer offsets at which threads keep their `tcache` pointer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "glibc_layout.h"
#include "glibc_walker.h"
#include "process_image.h"

namespace libdump::heapwalk {

struct ArenaRoots {
  std::string found_by;       // one line; when main_arena is 0, why none was found
  uint64_t main_arena = 0;
  std::vector<uint64_t> arenas;  // main_arena, then its `next` list
  uint64_t mp = 0;
  glibc::MallocPar mp_value{};
  // Offsets from a thread's fs_base to candidates for its `tcache` (exactly
  // one when libc's symbols name the variable).
  std::vector<int64_t> tcache_tpoffs;
  std::vector<HeapDamage> damage;
};

// An address as damage lines and found_by print it: "0x7f...".
std::string Hex(uint64_t v);

// The libc module of the image, or nullptr.
const procimage::ImageModule* FindLibc(const procimage::ProcessImage& image);

// Why an arena at addr cannot be one ("" when it reads as one): its top is a
// chunk of a writable mapping with PREV_INUSE set, ending inside it (for a
// thread arena, at the end of the heap whose heap_info points back), and
// every bin's links are its own head or 16-aligned chunks.
std::string ArenaProblem(const procimage::ProcessImage& image, uint64_t addr, bool main);

ArenaRoots FindArenaRoots(const procimage::ProcessImage& image, const GlibcOptions& options);

}  // namespace libdump::heapwalk
