// The walker over a snapshot of this very process, after known allocations
// on glibc's malloc: five size classes and mmapped blocks on the main thread
// and on four threads (their own arenas and tcaches), and blocks freed into
// tcaches, fastbins and the other bins. The threads wait while the snapshot
// is taken, so their tcaches are alive in it.
#include "glibc_walker.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <thread>

#include "glibc_layout.h"
#include "snapshot_image.h"

namespace libdump::heapwalk {
namespace {

using procimage::testing::SnapshotImage;
using procimage::testing::SnapshotThread;

constexpr size_t kSizes[] = {24, 100, 1000, 5000, 40000};
constexpr int kPerSize = 64, kThreads = 4, kLarge = 3;
constexpr size_t kLargeSize = 300 << 10;

// What one thread allocated and freed; reserved before it starts, so that
// recording a pointer allocates nothing.
struct Known {
  std::vector<void*> live, tcache, fastbin, bin;
  SnapshotThread thread;
  Known() {
    live.reserve(1024), tcache.reserve(64), fastbin.reserve(64), bin.reserve(256);
  }
};

void Allocate(Known* k) {
  void* by_size[std::size(kSizes)][kPerSize];
  for (size_t s = 0; s < std::size(kSizes); ++s)
    for (int i = 0; i < kPerSize; ++i) by_size[s][i] = malloc(kSizes[s]);
  for (int i = 0; i < kLarge; ++i) k->live.push_back(malloc(kLargeSize + i * 4096));
  k->live.push_back(aligned_alloc(1 << 16, kLargeSize));  // mmapped, moved forward by memalign
  for (size_t s = 0; s < std::size(kSizes); ++s) {
    for (int i = 0; i < kPerSize; ++i) {
      void* p = by_size[s][i];
      bool freed = true;
      if (kSizes[s] == 100 && i < 5) {
        k->tcache.push_back(p);  // 5 of a size: all in the tcache
      } else if (kSizes[s] == 24 && i < 20) {
        (i < 7 ? k->tcache : k->fastbin).push_back(p);  // the tcache takes 7, fastbins the rest
      } else if (kSizes[s] >= 1000 && i % 2 == 1 && i < kPerSize - 1) {
        // Between live neighbours: no coalescing; 1000 fills its tcache first.
        (kSizes[s] == 1000 && i < 14 ? k->tcache : k->bin).push_back(p);
      } else {
        k->live.push_back(p);
        freed = false;
      }
      if (freed) free(p);
    }
  }
}

struct State {
  std::vector<std::unique_ptr<Known>> known;
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  std::atomic<bool> release{false};
  struct mallinfo2 info {};
  std::unique_ptr<SnapshotImage> image;
};

State* g = nullptr;

class GlibcWalkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g = new State;
    for (int t = 0; t <= kThreads; ++t) g->known.push_back(std::make_unique<Known>());
    for (int t = 1; t <= kThreads; ++t) {
      g->threads.emplace_back([k = g->known[t].get()] {
        Allocate(k);
        k->thread = procimage::testing::ThisThread();
        g->ready.fetch_add(1);
        while (!g->release.load()) usleep(1000);
      });
    }
    Allocate(g->known[0].get());
    while (g->ready.load() < kThreads) usleep(1000);
    std::vector<SnapshotThread> threads;
    threads.reserve(kThreads + 1);
    g->known[0]->thread = procimage::testing::ThisThread();
    for (auto& k : g->known) threads.push_back(k->thread);
    auto* image = static_cast<SnapshotImage*>(::operator new(sizeof(SnapshotImage)));
    g->info = mallinfo2();
    new (image) SnapshotImage(threads);
    g->image.reset(image);
    g->release.store(true);
    for (auto& t : g->threads) t.join();
  }
  static void TearDownTestSuite() {
    delete g;
    g = nullptr;
  }
};

uint64_t Stat(const HeapWalk& w, const std::string& name) {
  for (const auto& [n, v] : w.stats)
    if (n == name) return v;
  ADD_FAILURE() << "no stat " << name;
  return 0;
}
uint64_t FreeCount(const HeapWalk& w, const std::string& name) {
  for (const auto& [n, v] : w.free_by_list)
    if (n == name) return v;
  ADD_FAILURE() << "no list " << name;
  return 0;
}

const LiveBlock* FindBlock(const HeapWalk& w, void* p) {
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  auto it = std::lower_bound(w.blocks.begin(), w.blocks.end(), a,
                             [](const LiveBlock& b, uint64_t x) { return b.addr < x; });
  return it != w.blocks.end() && it->addr == a ? &*it : nullptr;
}

void CheckKnown(const GlibcHeap& heap) {
  const HeapWalk& w = heap.walk;
  size_t live = 0, freed = 0;
  for (const auto& k : g->known) {
    for (void* p : k->live) {
      const LiveBlock* b = FindBlock(w, p);
      ASSERT_NE(b, nullptr) << p;
      EXPECT_EQ(b->size, malloc_usable_size(p)) << p;
      ++live;
    }
    auto expect_state = [&](const std::vector<void*>& ps, std::set<ChunkState> states) {
      for (void* p : ps) {
        EXPECT_EQ(FindBlock(w, p), nullptr) << p << " was freed";
        const GlibcChunk* c = heap.Find(reinterpret_cast<uint64_t>(p) - 16);
        ASSERT_NE(c, nullptr) << p;
        EXPECT_TRUE(states.count(c->state)) << p << " is " << ChunkStateName(c->state);
        ++freed;
      }
    };
    expect_state(k->tcache, {ChunkState::kTcache});
    expect_state(k->fastbin, {ChunkState::kFastbin});
    expect_state(k->bin, {ChunkState::kUnsorted, ChunkState::kSmallBin, ChunkState::kLargeBin});
  }
  EXPECT_EQ(live, (kThreads + 1) * (kLarge + 1 + std::size(kSizes) * kPerSize - 5 - 20 - 3 * 31));
  EXPECT_EQ(freed, (kThreads + 1) * (5 + 20 + 3 * 31));
  for (size_t i = 1; i < w.blocks.size(); ++i)
    ASSERT_LE(w.blocks[i - 1].addr + w.blocks[i - 1].size, w.blocks[i].addr) << "blocks overlap or are unsorted";
}

// mallinfo2 walks the same arenas from inside: its figures must be ours to
// the byte. uordblks counts tcache'd chunks as in use and includes what no
// chunk covers (each thread arena's heap_info and malloc_state: its first
// chunk starts 0x8d0 bytes into its heap).
void CheckMallinfo(const GlibcHeap& heap) {
  const HeapWalk& w = heap.walk;
  const struct mallinfo2& mi = g->info;
  const uint64_t arenas = Stat(w, "arenas");
  EXPECT_GE(arenas, 2u);
  EXPECT_EQ(mi.arena, Stat(w, "system_mem"));
  EXPECT_EQ(mi.hblks, Stat(w, "mmapped_blocks"));
  EXPECT_EQ(mi.hblkhd, Stat(w, "mmapped_bytes"));
  EXPECT_EQ(mi.smblks, FreeCount(w, "fastbin"));
  EXPECT_EQ(mi.fsmblks, Stat(w, "fastbin_bytes"));
  EXPECT_EQ(FreeCount(w, "free in no bin"), 0u);
  EXPECT_EQ(mi.ordblks, arenas + FreeCount(w, "unsorted") + FreeCount(w, "smallbin") + FreeCount(w, "largebin"));
  EXPECT_EQ(mi.fordblks, Stat(w, "top_bytes") + Stat(w, "fastbin_bytes") + Stat(w, "bin_bytes"));
  EXPECT_EQ(Stat(w, "arena_overhead_bytes"), (arenas - 1) * glibc::FirstChunkOfArena(sizeof(glibc::HeapInfo)));
  EXPECT_EQ(mi.uordblks,
            Stat(w, "in_use_chunk_bytes") + Stat(w, "tcache_bytes") + Stat(w, "arena_overhead_bytes"));
  EXPECT_EQ(Stat(w, "heaps"), arenas);
}

TEST_F(GlibcWalkerTest, SymbolsFindEveryKnownBlock) {
  ASSERT_TRUE(g->image->ok());
  GlibcWalker walker;
  std::string why;
  ASSERT_TRUE(walker.Recognise(*g->image, &why)) << why;
  const GlibcHeap heap = walker.Inspect(*g->image);
  for (const auto& d : heap.walk.damage) ADD_FAILURE() << std::hex << d.addr << ": " << d.what;
  if (heap.walk.found_by.find(".symtab") == std::string::npos) GTEST_SKIP() << "no libc debug file: " << heap.walk.found_by;
  CheckKnown(heap);
  CheckMallinfo(heap);
  EXPECT_EQ(Stat(heap.walk, "tcaches_by_thread_pointer"), kThreads + 1u);
  EXPECT_NE(heap.mp, 0u);
  EXPECT_EQ(Stat(heap.walk, "mp_.n_mmaps"), g->info.hblks);
  std::printf("%s\nlive blocks %zu (%llu bytes), free %llu, arenas %llu, tcaches %llu\n", heap.walk.found_by.c_str(),
              heap.walk.blocks.size(), (unsigned long long)heap.walk.live_bytes,
              (unsigned long long)heap.walk.free_blocks, (unsigned long long)Stat(heap.walk, "arenas"),
              (unsigned long long)Stat(heap.walk, "tcaches"));
}

TEST_F(GlibcWalkerTest, StructureFindsTheSameHeap) {
  const GlibcHeap by_structure = GlibcWalker({.use_symbols = false}).Inspect(*g->image);
  for (const auto& d : by_structure.walk.damage) ADD_FAILURE() << std::hex << d.addr << ": " << d.what;
  EXPECT_NE(by_structure.walk.found_by.find("by structure"), std::string::npos) << by_structure.walk.found_by;
  CheckKnown(by_structure);
  CheckMallinfo(by_structure);
  EXPECT_EQ(Stat(by_structure.walk, "tcaches_by_thread_pointer"), kThreads + 1u);
  const GlibcHeap by_symbols = GlibcWalker().Inspect(*g->image);
  if (by_symbols.walk.found_by.find(".symtab") == std::string::npos) return;
  EXPECT_EQ(by_structure.main_arena, by_symbols.main_arena);
  EXPECT_EQ(by_structure.mp, by_symbols.mp);
  EXPECT_EQ(by_structure.arenas, by_symbols.arenas);
  ASSERT_EQ(by_structure.walk.blocks.size(), by_symbols.walk.blocks.size());
  for (size_t i = 0; i < by_symbols.walk.blocks.size(); ++i) {
    ASSERT_EQ(by_structure.walk.blocks[i].addr, by_symbols.walk.blocks[i].addr);
    ASSERT_EQ(by_structure.walk.blocks[i].size, by_symbols.walk.blocks[i].size);
  }
}

TEST_F(GlibcWalkerTest, NoOtherAllocatorHere) { EXPECT_EQ(OtherAllocator(*g->image), ""); }

}  // namespace
}  // namespace libdump::heapwalk
