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
#include "testing/heap_report.h"
#include "testing/known_heap.h"

namespace libdump::heapwalk {
namespace {

using procimage::testing::SnapshotImage;
using procimage::testing::SnapshotThread;

using testing::KnownHeap;
constexpr int kThreads = 4;

struct Known : KnownHeap {
  SnapshotThread thread;
};

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
        k->Allocate();
        k->thread = procimage::testing::ThisThread();
        g->ready.fetch_add(1);
        while (!g->release.load()) usleep(1000);
      });
    }
    // What the main thread allocates after its frees would reuse them.
    std::vector<SnapshotThread> threads;
    threads.reserve(kThreads + 1);
    auto* image = static_cast<SnapshotImage*>(::operator new(sizeof(SnapshotImage)));
    g->known[0]->Allocate();
    while (g->ready.load() < kThreads) usleep(1000);
    g->known[0]->thread = procimage::testing::ThisThread();
    for (auto& k : g->known) threads.push_back(k->thread);
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

testing::HeapReport Report() {
  testing::HeapReport r;
  for (const auto& k : g->known) r.Add(*k);
  r.info = g->info;
  return r;
}

TEST_F(GlibcWalkerTest, SymbolsFindEveryKnownBlock) {
  ASSERT_TRUE(g->image->ok());
  GlibcWalker walker;
  std::string why;
  ASSERT_TRUE(walker.Recognise(*g->image, &why)) << why;
  const GlibcHeap heap = walker.Inspect(*g->image);
  for (const auto& d : heap.walk.damage) ADD_FAILURE() << std::hex << d.addr << ": " << d.what;
  if (heap.walk.found_by.find(".symtab") == std::string::npos) GTEST_SKIP() << "no libc debug file: " << heap.walk.found_by;
  const testing::HeapReport r = Report();
  testing::ExpectKnownBlocks(heap, r);
  testing::ExpectMallinfo(heap, r.info);
  EXPECT_EQ(testing::Stat(heap.walk, "tcaches_by_thread_pointer"), kThreads + 1u);
  EXPECT_NE(heap.mp, 0u);
  EXPECT_EQ(testing::Stat(heap.walk, "mp_.n_mmaps"), g->info.hblks);
  testing::PrintFigures(heap, r);
}

TEST_F(GlibcWalkerTest, StructureFindsTheSameHeap) {
  const GlibcHeap by_structure = GlibcWalker({.use_symbols = false}).Inspect(*g->image);
  for (const auto& d : by_structure.walk.damage) ADD_FAILURE() << std::hex << d.addr << ": " << d.what;
  EXPECT_NE(by_structure.walk.found_by.find("by structure"), std::string::npos) << by_structure.walk.found_by;
  const testing::HeapReport r = Report();
  testing::ExpectKnownBlocks(by_structure, r);
  testing::ExpectMallinfo(by_structure, r.info);
  EXPECT_EQ(testing::Stat(by_structure.walk, "tcaches_by_thread_pointer"), kThreads + 1u);
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

// A thread arena that outgrew its first 64 MiB heap: its heaps are found
// from top's heap back through heap_info.prev, the older one ending in a
// fencepost. Blocks of 100 KiB stay under the mmap threshold.
TEST(GlibcWalkerHeapsTest, AnArenaOfSeveralHeaps) {
  constexpr int kBlocks = 800;
  constexpr size_t kSize = 100 << 10;
  std::vector<void*> blocks;
  blocks.reserve(kBlocks);
  std::atomic<bool> ready{false}, release{false};
  SnapshotThread thread;
  std::thread t([&] {
    for (int i = 0; i < kBlocks; ++i) blocks.push_back(malloc(kSize));
    thread = procimage::testing::ThisThread();
    ready.store(true);
    while (!release.load()) usleep(1000);
  });
  std::vector<SnapshotThread> threads;
  threads.reserve(2);
  auto* image = static_cast<SnapshotImage*>(::operator new(sizeof(SnapshotImage)));
  while (!ready.load()) usleep(1000);
  threads.push_back(procimage::testing::ThisThread());
  threads.push_back(thread);
  const struct mallinfo2 info = mallinfo2();
  new (image) SnapshotImage(threads);
  std::unique_ptr<SnapshotImage> owned(image);
  release.store(true);
  t.join();
  ASSERT_TRUE(image->ok());
  const GlibcHeap heap = GlibcWalker().Inspect(*image);
  for (const auto& d : heap.walk.damage) ADD_FAILURE() << std::hex << d.addr << ": " << d.what;
  EXPECT_GT(testing::Stat(heap.walk, "heaps"), testing::Stat(heap.walk, "arenas"));
  for (void* p : blocks) {
    const LiveBlock* b = testing::FindBlock(heap.walk, reinterpret_cast<uint64_t>(p));
    ASSERT_NE(b, nullptr) << p;
    EXPECT_EQ(b->size, malloc_usable_size(p));
  }
  testing::ExpectMallinfo(heap, info);
  std::printf("%llu heaps in %llu arenas, overhead %llu bytes\n",
              (unsigned long long)testing::Stat(heap.walk, "heaps"), (unsigned long long)testing::Stat(heap.walk, "arenas"),
              (unsigned long long)testing::Stat(heap.walk, "arena_overhead_bytes"));
  for (void* p : blocks) free(p);
}

}  // namespace
}  // namespace libdump::heapwalk
