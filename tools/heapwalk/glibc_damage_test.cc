// The walker over a hand-made heap (testing/synthetic_heap.h), whole and then
// damaged: each damage is listed and the walk ends.
#include <gtest/gtest.h>

#include "glibc_layout.h"
#include "glibc_walker.h"
#include "testing/heap_report.h"
#include "testing/synthetic_heap.h"

namespace libdump::heapwalk {
namespace {

using testing::SyntheticHeap;
using namespace glibc;

bool HasDamage(const HeapWalk& w, const std::string& part) {
  for (const auto& d : w.damage)
    if (d.what.find(part) != std::string::npos) return true;
  return false;
}
std::string AllDamage(const HeapWalk& w) {
  std::string s;
  for (const auto& d : w.damage) s += d.what + "\n";
  return s;
}
ChunkState StateOf(const GlibcHeap& h, uint64_t chunk) {
  const GlibcChunk* c = h.Find(chunk);
  return c ? c->state : ChunkState::kTop;
}

TEST(GlibcDamageTest, WholeHeapReadsAsBuilt) {
  SyntheticHeap s;
  GlibcWalker walker;
  std::string why;
  ASSERT_TRUE(walker.Recognise(s.image, &why)) << why;
  EXPECT_NE(why.find("by structure"), std::string::npos) << why;
  const GlibcHeap h = walker.Inspect(s.image);
  EXPECT_EQ(h.main_arena, SyntheticHeap::kArena);
  EXPECT_TRUE(h.walk.damage.empty()) << AllDamage(h.walk);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kHeap), ChunkState::kInUse);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kA), ChunkState::kInUse);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kTcached), ChunkState::kTcache);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kFast), ChunkState::kFastbin);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kFree), ChunkState::kUnsorted);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kMmap), ChunkState::kMmapped);
  EXPECT_EQ(h.arenas, (std::vector<uint64_t>{SyntheticHeap::kArena, SyntheticHeap::kThreadArena}));
  EXPECT_EQ(StateOf(h, SyntheticHeap::kThreadTcache), ChunkState::kInUse);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kThreadChunk), ChunkState::kInUse);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kThreadTop), ChunkState::kTop);
  // Live: the tcache struct, A, C, E, the mmapped chunk, then the thread's
  // tcache struct and chunk; usable sizes as malloc_usable_size gives them.
  ASSERT_EQ(h.walk.blocks.size(), 7u);
  EXPECT_EQ(h.walk.blocks[0].addr, SyntheticHeap::kHeap + 16);
  EXPECT_EQ(h.walk.blocks[0].size, kTcacheChunk - 8);
  EXPECT_EQ(h.walk.blocks[2].size, 0x30u - 8);
  EXPECT_EQ(h.walk.blocks[4].addr, SyntheticHeap::kThreadTcache + 16);
  EXPECT_EQ(h.walk.blocks[5].addr, SyntheticHeap::kThreadChunk + 16);
  EXPECT_EQ(h.walk.blocks[5].size, 0x40u - 8);
  EXPECT_EQ(h.walk.blocks[6].addr, SyntheticHeap::kMmap + 16);
  EXPECT_EQ(h.walk.blocks[6].size, SyntheticHeap::kMmapSize - 16);
  EXPECT_EQ(testing::Stat(h.walk, "arena_overhead_bytes"), 0x8d0u);
  EXPECT_EQ(h.walk.free_blocks, 3u);
  EXPECT_EQ(h.walk.free_bytes, 0x20u + 0x20 + 0x100);
}

TEST(GlibcDamageTest, ChunkSizePastTheHeap) {
  SyntheticHeap s;
  s.Chunk(SyntheticHeap::kC, 0x100000, true);
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "past its heap")) << AllDamage(h.walk);
  EXPECT_NE(h.Find(SyntheticHeap::kA), nullptr);  // what comes before is kept
}

TEST(GlibcDamageTest, SizeZero) {
  SyntheticHeap s;
  s.Chunk(SyntheticHeap::kA, 0, true);
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "impossible")) << AllDamage(h.walk);
}

TEST(GlibcDamageTest, FastbinLoop) {
  SyntheticHeap s;
  s.image.Put(SyntheticHeap::kFast + 16, Reveal(SyntheticHeap::kFast + 16, SyntheticHeap::kFast));
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "fastbin 0")) << AllDamage(h.walk);
  EXPECT_TRUE(HasDamage(h.walk, "loops")) << AllDamage(h.walk);
}

TEST(GlibcDamageTest, TcacheLoop) {
  SyntheticHeap s;
  s.image.Put(SyntheticHeap::kHeap + 16, uint16_t{5});
  s.image.Put(SyntheticHeap::kTcached + 16, Reveal(SyntheticHeap::kTcached + 16, SyntheticHeap::kTcached + 16));
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "tcache bin 0")) << AllDamage(h.walk);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kTcached), ChunkState::kTcache);
}

TEST(GlibcDamageTest, TcacheCountDisagrees) {
  SyntheticHeap s;
  s.image.Put(SyntheticHeap::kHeap + 16, uint16_t{3});
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "has 1 entries, its count says 3")) << AllDamage(h.walk);
}

TEST(GlibcDamageTest, OverlappingChunks) {
  SyntheticHeap s;
  // C claims to reach into the middle of the free chunk: the walk no longer
  // meets top, and the unsorted bin's link is no chunk any more.
  s.Chunk(SyntheticHeap::kC, 0x50, true);
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_FALSE(h.walk.damage.empty());
  EXPECT_TRUE(HasDamage(h.walk, "bin 1") || HasDamage(h.walk, "top")) << AllDamage(h.walk);
}

TEST(GlibcDamageTest, FastbinIntoTheMiddleOfAChunk) {
  SyntheticHeap s;
  MallocState a;
  ASSERT_TRUE(s.image.ReadValue(SyntheticHeap::kArena, &a));
  a.fastbins[0] = SyntheticHeap::kC + 0x10;
  s.image.Put(SyntheticHeap::kArena, a);
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "not a chunk")) << AllDamage(h.walk);
}

TEST(GlibcDamageTest, GarbageArenaOnTheList) {
  SyntheticHeap s;
  s.image.Put(SyntheticHeap::kArena + offsetof(MallocState, next), SyntheticHeap::kLibc + 0x3000);
  GlibcWalker walker;
  std::string why;
  // By structure, an arena whose list does not come back is no main_arena.
  EXPECT_FALSE(walker.Recognise(s.image, &why));
  const GlibcHeap h = walker.Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "not a glibc heap")) << AllDamage(h.walk);
  EXPECT_TRUE(h.walk.blocks.empty());
}

TEST(GlibcDamageTest, GarbageMainArena) {
  SyntheticHeap s;
  std::vector<uint8_t> junk(sizeof(MallocState));
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 37 + 11);
  std::memcpy(s.image.At(SyntheticHeap::kArena), junk.data(), junk.size());
  std::string why;
  EXPECT_FALSE(GlibcWalker().Recognise(s.image, &why));
  EXPECT_NE(why.find("no malloc_state"), std::string::npos) << why;
}

TEST(GlibcDamageTest, ThreadHeapInfoPointsElsewhere) {
  SyntheticHeap s;
  s.image.Put(SyntheticHeap::kThreadHeap, SyntheticHeap::kArena);  // heap_info.ar_ptr
  GlibcWalker walker({.use_symbols = false});
  // The main arena's list no longer comes back through sound arenas.
  std::string why;
  EXPECT_FALSE(walker.Recognise(s.image, &why)) << why;
}

TEST(GlibcDamageTest, ThreadChunkPastItsHeap) {
  SyntheticHeap s;
  s.Chunk(SyntheticHeap::kThreadChunk, 0x40000 | kNonMainArena, true);
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "past its heap")) << AllDamage(h.walk);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kThreadTcache), ChunkState::kInUse);
}

// Every block of a walk lies in a mapping of the image, its usable bytes
// (up to the successor's prev_size) included.
void ExpectBlocksInsideMappings(const SyntheticHeap& s, const HeapWalk& w) {
  for (const auto& b : w.blocks) {
    const auto* m = s.image.FindMapping(b.addr);
    ASSERT_NE(m, nullptr) << std::hex << b.addr;
    EXPECT_LE(b.size, m->end - b.addr) << std::hex << b.addr;
  }
}

TEST(GlibcDamageTest, ChunkRunsToTheEndOfItsMapping) {
  SyntheticHeap s;
  // The tcache struct claims the whole brk heap: its size fits the heap, but
  // its last usable bytes would be the 8 after the mapping.
  s.Chunk(SyntheticHeap::kHeap, SyntheticHeap::kHeapSize, false);
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "runs past its mapping")) << AllDamage(h.walk);
  ExpectBlocksInsideMappings(s, h.walk);
}

TEST(GlibcDamageTest, ThreadChunkRunsToTheEndOfItsHeap) {
  SyntheticHeap s;
  s.Chunk(SyntheticHeap::kThreadChunk,
          (SyntheticHeap::kThreadHeap + SyntheticHeap::kThreadHeapSize - SyntheticHeap::kThreadChunk) | kNonMainArena,
          true);
  const GlibcHeap h = GlibcWalker().Inspect(s.image);
  EXPECT_TRUE(HasDamage(h.walk, "runs past its mapping")) << AllDamage(h.walk);
  EXPECT_EQ(StateOf(h, SyntheticHeap::kThreadTcache), ChunkState::kInUse);
  ExpectBlocksInsideMappings(s, h.walk);
}

TEST(GlibcDamageTest, NoLibc) {
  testing::SyntheticImage empty;
  std::string why;
  EXPECT_FALSE(GlibcWalker().Recognise(empty, &why));
  EXPECT_EQ(why, "no libc.so.6 among the image's modules");
}

}  // namespace
}  // namespace libdump::heapwalk
