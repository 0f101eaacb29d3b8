#include "heap_walk.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "testing/debug_heap_testutil.h"
#include "libdump/heap.h"

namespace libdump {
namespace {

// Collects objects without allocating from our heap (the vector uses the
// process's malloc, which in these tests is not libdump).
struct Collector {
  std::vector<ObjectInfo> objects;
  Collector() { objects.reserve(1 << 20); }
  static void Visit(const ObjectInfo& o, void* c) { static_cast<Collector*>(c)->objects.push_back(o); }
};

std::vector<ObjectInfo> Walk() {
  Collector c;
  WalkHeap(&Collector::Visit, &c);
  return c.objects;
}

TEST(HeapWalk, ReportsExactlyTheLiveObjectsInAddressOrder) {
  std::mt19937 rng(7);
  std::set<uintptr_t> live;
  std::vector<void*> all;
  for (int i = 0; i < 30000; ++i) {
    const size_t n = rng() % 16 == 0 ? 40000 + rng() % 300000 : rng() % 3000;
    all.push_back(Allocate(n));
  }
  std::shuffle(all.begin(), all.end(), rng);
  for (size_t i = 0; i < all.size(); ++i) {
    if (i % 2) Free(all[i]); else live.insert(reinterpret_cast<uintptr_t>(all[i]));
  }
  // Half of the frees come from another thread, whose exit gives them back.
  std::vector<void*> remote;
  for (int i = 0; i < 5000; ++i) remote.push_back(Allocate(100));
  std::thread([&] { for (void* p : remote) Free(p); }).join();

  const auto objects = Walk();
  std::set<uintptr_t> seen;
  for (size_t i = 0; i < objects.size(); ++i) {
    if (i > 0) {
      ASSERT_LE(objects[i - 1].addr + objects[i - 1].size, objects[i].addr) << "order or overlap";
    }
    seen.insert(objects[i].addr);
    EXPECT_EQ(objects[i].size, UsableSize(reinterpret_cast<void*>(objects[i].addr)));
  }
  // Other tests' objects may be live too; ours must be there, freed ones not.
  for (uintptr_t p : live) EXPECT_TRUE(seen.count(p)) << std::hex << p;
  for (size_t i = 1; i < all.size(); i += 2) {
    EXPECT_FALSE(seen.count(reinterpret_cast<uintptr_t>(all[i])) && !live.count(reinterpret_cast<uintptr_t>(all[i])));
  }
  for (void* p : remote) EXPECT_FALSE(seen.count(reinterpret_cast<uintptr_t>(p)) && !live.count(reinterpret_cast<uintptr_t>(p)));
  for (uintptr_t p : live) Free(reinterpret_cast<void*>(p));
}

TEST(HeapWalk, TheWalkIsExactForAFreshThreadsObjects) {
  // Exactness without other tests' noise: count objects of one odd size.
  constexpr size_t kSize = 4000;  // class 4096: nothing else here uses it
  std::vector<void*> mine;
  for (int i = 0; i < 777; ++i) mine.push_back(Allocate(kSize));
  for (int i = 0; i < 777; i += 3) Free(mine[i]);
  size_t n = 0;
  for (const auto& o : Walk()) n += o.size == 4096;
  EXPECT_EQ(n, 777u - 259u);
  for (int i = 0; i < 777; ++i) if (i % 3) Free(mine[i]);
  n = 0;
  for (const auto& o : Walk()) n += o.size == 4096;
  EXPECT_EQ(n, 0u);
}

TEST(HeapWalk, FindObjectResolvesInteriorPointers) {
  char* small = static_cast<char*>(Allocate(200));
  char* large = static_cast<char*>(Allocate(1 << 20));
  ObjectInfo o;
  ASSERT_TRUE(FindObject(small + 150, &o));
  EXPECT_EQ(o.addr, reinterpret_cast<uintptr_t>(small));
  EXPECT_EQ(o.size, UsableSize(small));
  ASSERT_TRUE(FindObject(large + 999999, &o));
  EXPECT_EQ(o.addr, reinterpret_cast<uintptr_t>(large));
  int on_stack;
  EXPECT_FALSE(FindObject(&on_stack, &o));
  Free(small);
  Free(large);
  EXPECT_FALSE(FindObject(small, &o));
  EXPECT_FALSE(FindObject(large + 10, &o));
}

TEST(HeapWalk, NeverReadsFreeMemory) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("poisons new spans, which may lie in the protected pages");
  // Freed pages made unreadable: a walk that touched them would fault. The
  // small objects come first: a refill writes the links of the slots it
  // takes into their first words, so they must not lie in those pages.
  std::vector<void*> small;
  for (int i = 0; i < 100; ++i) small.push_back(Allocate(64));
  void* p = Allocate(8 << 20);
  Free(p);
  ASSERT_EQ(mprotect(p, 8 << 20, PROT_NONE), 0);
  const auto objects = Walk();
  EXPECT_GE(objects.size(), 100u);
  ASSERT_EQ(mprotect(p, 8 << 20, PROT_READ | PROT_WRITE), 0);
  for (void* s : small) Free(s);
}

TEST(HeapWalk, HeapRangeCoversEveryObject) {
  void* p = Allocate(100);
  void* q = Allocate(5 << 20);
  const HeapRange r = GetHeapRange();
  for (void* x : {p, q}) {
    EXPECT_GE(reinterpret_cast<uintptr_t>(x), r.lo);
    EXPECT_LT(reinterpret_cast<uintptr_t>(x), r.hi);
  }
  Free(p);
  Free(q);
}

// Many threads allocate and free while another walks. Objects a thread holds
// for the whole walk must be seen; the order must hold; TSan checks the rest.
TEST(HeapWalk, StressWalkWhileThreadsAllocateAndFree) {
  constexpr int kThreads = 6;
  std::atomic<bool> stop{false};
  std::atomic<int> pinned_ready{0};
  std::vector<std::vector<uintptr_t>> pinned(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 200; ++i) pinned[t].push_back(reinterpret_cast<uintptr_t>(Allocate(rng() % 5000)));
      pinned_ready.fetch_add(1);
      std::vector<void*> churn;
      while (!stop.load(std::memory_order_relaxed)) {
        churn.push_back(Allocate(rng() % 2000));
        if (rng() % 64 == 0) churn.push_back(Allocate(40000 + rng() % 100000));
        if (churn.size() > 500 || rng() % 3 == 0) {
          const size_t k = rng() % churn.size();
          Free(churn[k]);
          churn[k] = churn.back();
          churn.pop_back();
        }
      }
      for (void* p : churn) Free(p);
    });
  }
  while (pinned_ready.load() < kThreads) std::this_thread::yield();
  for (int round = 0; round < 30; ++round) {
    const auto objects = Walk();
    std::vector<uintptr_t> addrs;
    for (const auto& o : objects) addrs.push_back(o.addr);
    ASSERT_TRUE(std::is_sorted(addrs.begin(), addrs.end()));
    ASSERT_EQ(std::adjacent_find(addrs.begin(), addrs.end()), addrs.end()) << "an object seen twice";
    for (const auto& v : pinned) {
      for (uintptr_t p : v) ASSERT_TRUE(std::binary_search(addrs.begin(), addrs.end(), p));
    }
  }
  stop = true;
  for (auto& th : threads) th.join();
  for (const auto& v : pinned) for (uintptr_t p : v) Free(reinterpret_cast<void*>(p));
}

}  // namespace
}  // namespace libdump
