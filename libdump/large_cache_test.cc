// Each thread's cache of freed large spans (large_cache.h): what it keeps,
// what bounds it, and that the walk, FindObject, calloc and the annotations
// see a cached span as free.
#include "large_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "heap_walk.h"
#include "libdump/heap.h"
#include "libdump/typed.h"
#include "page_map.h"
#include "thread_cache.h"

struct CachedNode {
  CachedNode* next;
};
LIBDUMP_TYPE(CachedNode, next)

namespace libdump {
namespace {

using internal::kLargeCacheBytes;
using internal::kPageSize;
using internal::t_heap;

constexpr size_t kBig = 40 << 10;  // above the largest size class, 5 pages

bool Walked(const void* p) {
  bool found = false;
  struct Ctx {
    uintptr_t addr;
    bool* found;
  } ctx{reinterpret_cast<uintptr_t>(p), &found};
  WalkHeap([](const ObjectInfo& o, void* c) {
    auto* x = static_cast<Ctx*>(c);
    if (o.addr == x->addr) *x->found = true;
  }, &ctx);
  return found;
}

uint64_t CachedBytes() { return t_heap->large_cache.bytes; }

TEST(LargeCache, AFreedLargeObjectStaysInTheThreadAndLeavesTheWalk) {
  ReleaseFreeMemory();  // empties this thread's cache
  void* p = Allocate(kBig);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(Walked(p));
  ObjectInfo info;
  ASSERT_TRUE(FindObject(p, &info));
  const uint64_t spans = GetHeapStats().span_bytes;
  Free(p);
  // Kept by the thread, not given back to the page heap...
  EXPECT_EQ(CachedBytes(), 5 * kPageSize);
  EXPECT_EQ(GetHeapStats().span_bytes, spans);
  // ...and no object for the walk or FindObject.
  EXPECT_FALSE(Walked(p));
  EXPECT_FALSE(FindObject(p, &info));
  // The next malloc of as many pages takes it back, and it is an object again.
  void* q = Allocate(kBig - 100);
  EXPECT_EQ(q, p);
  EXPECT_EQ(CachedBytes(), 0u);
  EXPECT_TRUE(Walked(q));
  ASSERT_TRUE(FindObject(q, &info));
  EXPECT_EQ(info.size, 5 * kPageSize);
  Free(q);
}

TEST(LargeCache, OnlyExactPageCountsAreReused) {
  ReleaseFreeMemory();
  void* p = Allocate(kBig);  // 5 pages
  Free(p);
  void* q = Allocate(7 * kPageSize);  // 7 pages: not from the cache
  EXPECT_NE(q, p);
  EXPECT_EQ(CachedBytes(), 5 * kPageSize);
  Free(q);
  ReleaseFreeMemory();
}

TEST(LargeCache, HoldsAtMostItsBoundAndNothingAbove64KiB) {
  ReleaseFreeMemory();
  void* huge = Allocate(72 << 10);  // 9 pages
  Free(huge);
  EXPECT_EQ(CachedBytes(), 0u);
  std::vector<void*> objs;
  for (int i = 0; i < 20; ++i) objs.push_back(Allocate(64 << 10));
  for (void* p : objs) Free(p);
  EXPECT_LE(CachedBytes(), kLargeCacheBytes);
  EXPECT_GT(CachedBytes(), kLargeCacheBytes - (64 << 10));
  ReleaseFreeMemory();
  EXPECT_EQ(CachedBytes(), 0u);
}

TEST(LargeCache, CallocOfACachedSpanIsZero) {
  ReleaseFreeMemory();
  void* p = Allocate(kBig);
  memset(p, 0xab, kBig);
  Free(p);
  auto* q = static_cast<unsigned char*>(AllocateZeroed(1, kBig));
  ASSERT_EQ(static_cast<void*>(q), p);  // the cached span, dirty
  for (size_t i = 0; i < kBig; ++i) ASSERT_EQ(q[i], 0) << i;
  Free(q);
}

TEST(LargeCache, AReusedSpanCarriesNoTypeOfItsLastObject) {
  ReleaseFreeMemory();
  CachedNode* a = make_array<CachedNode>(kBig / sizeof(CachedNode));
  ObjectInfo info;
  ASSERT_TRUE(FindObject(a, &info));
  ASSERT_NE(info.type_id, 0u);
  destroy(a);
  void* q = Allocate(kBig);
  ASSERT_EQ(q, static_cast<void*>(a));
  ASSERT_TRUE(FindObject(q, &info));
  EXPECT_EQ(info.type_id, 0u);
  EXPECT_EQ(info.count, 0u);
  Free(q);
}

TEST(LargeCache, ThreadExitGivesTheCachedSpansBack) {
  ReleaseFreeMemory();
  const uint64_t before = GetHeapStats().span_bytes;
  internal::ThreadHeap* heap = nullptr;
  std::thread([&] {
    std::vector<void*> objs;
    for (int i = 0; i < 4; ++i) objs.push_back(Allocate(kBig));
    for (void* p : objs) Free(p);
    heap = t_heap;
    EXPECT_EQ(heap->large_cache.bytes, 4 * 5 * kPageSize);
  }).join();
  EXPECT_EQ(heap->large_cache.bytes, 0u);
  EXPECT_EQ(GetHeapStats().span_bytes, before);
}

// A thread's frees of another thread's large objects land in its own cache.
TEST(LargeCache, AnotherThreadsObjectGoesToTheFreeingThread) {
  ReleaseFreeMemory();
  void* p = Allocate(kBig);
  std::thread([p] {
    Free(Allocate(16));  // a heap of its own: a thread without one frees into the page heap
    Free(p);
    EXPECT_EQ(t_heap->large_cache.bytes, 5 * kPageSize);
    void* q = Allocate(kBig);
    EXPECT_EQ(q, p);
    Free(q);
  }).join();
  EXPECT_EQ(CachedBytes(), 0u);
}

// Threads replace 33-64 KiB objects while the running program is walked:
// objects that stay live throughout are always reported, objects freed
// before a walk starts never are.
TEST(LargeCache, WalkOfARunningProgramIsExact) {
  constexpr int kThreads = 2, kOps = 3000;
  std::vector<void*> survivors;
  for (int i = 0; i < 8; ++i) survivors.push_back(Allocate((33 << 10) + i * 4096));
  void* doomed = Allocate(kBig);
  Free(doomed);  // cached here; the workers may not take it
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<void*> mine(16, nullptr);
      uint64_t x = 0x9e3779b97f4a7c15ULL * (t + 1);
      for (int i = 0; i < kOps || !stop.load(std::memory_order_relaxed); ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        void*& slot = mine[x % mine.size()];
        Free(slot);
        slot = Allocate((33 << 10) + (x >> 32) % (31 << 10));
        if (i > 100 * kOps) break;
      }
      for (void* p : mine) Free(p);
    });
  }
  for (int round = 0; round < 20; ++round) {
    std::set<uintptr_t> live;
    WalkHeap([](const ObjectInfo& o, void* c) { static_cast<std::set<uintptr_t>*>(c)->insert(o.addr); }, &live);
    for (void* p : survivors) ASSERT_EQ(live.count(reinterpret_cast<uintptr_t>(p)), 1u);
    ASSERT_EQ(live.count(reinterpret_cast<uintptr_t>(doomed)), 0u);
  }
  stop.store(true);
  for (auto& w : workers) w.join();
  for (void* p : survivors) Free(p);
  ReleaseFreeMemory();
}

using LargeCacheDeathTest = ::testing::Test;

TEST(LargeCacheDeathTest, SecondFreeOfACachedObjectIsCaught) {
  EXPECT_DEATH(
      {
        void* p = Allocate(kBig);
        Free(p);
        Free(p);
      },
      "double free");
}

}  // namespace
}  // namespace libdump
