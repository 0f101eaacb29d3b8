// The allocator through its public API, one thread and many.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "testing/debug_heap_testutil.h"
#include "libdump/heap.h"
#include "page_map.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump {
namespace {

void Fill(void* p, size_t n, uint8_t seed) {
  auto* b = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i);
}
bool Check(const void* p, size_t n, uint8_t seed) {
  auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    if (b[i] != static_cast<uint8_t>(seed + i)) return false;
  }
  return true;
}

// The slot counts of spans are kept with CountBits: compare it with a
// bit-by-bit count on words of every density.
TEST(ThreadCache, CountBitsCountsEverySetBit) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    uint64_t x = rng();
    for (int k = i % 4; k > 0; --k) x &= rng();  // sparser words
    if (i % 7 == 0) x = ~x;                       // denser ones
    uint32_t slow = 0;
    for (int b = 0; b < 64; ++b) slow += (x >> b) & 1;
    ASSERT_EQ(internal::CountBits(x), slow) << std::hex << x;
  }
  EXPECT_EQ(internal::CountBits(0), 0u);
  EXPECT_EQ(internal::CountBits(~uint64_t{0}), 64u);
}

TEST(ThreadCache, ObjectsDoNotOverlapAndKeepTheirContents) {
  std::mt19937 rng(1);
  struct Obj { void* p; size_t n; uint8_t seed; };
  std::vector<Obj> live;
  for (int i = 0; i < 20000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(Check(live[k].p, live[k].n, live[k].seed));
      Free(live[k].p);
      live[k] = live.back();
      live.pop_back();
    } else {
      const size_t n = rng() % 8 == 0 ? rng() % 200000 : rng() % 2048;
      void* p = Allocate(n);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
      EXPECT_GE(UsableSize(p), n);
      const uint8_t seed = static_cast<uint8_t>(rng());
      Fill(p, n, seed);
      live.push_back({p, n, seed});
    }
  }
  for (auto& o : live) {
    ASSERT_TRUE(Check(o.p, o.n, o.seed));
    Free(o.p);
  }
}

TEST(ThreadCache, AlignedAllocationsAreAligned) {
  for (size_t align = 1; align <= (size_t{1} << 21); align *= 2) {
    for (size_t size : {size_t{1}, size_t{24}, align, align + 1, size_t{40000}}) {
      void* p = AllocateAligned(align, size);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align << " " << size;
      EXPECT_GE(UsableSize(p), size);
      memset(p, 1, size);
      Free(p);
    }
  }
}

TEST(ThreadCache, ReallocateKeepsThePrefixAndZeroedMemoryIsZero) {
  char* p = static_cast<char*>(Allocate(10));
  memcpy(p, "0123456789", 10);
  for (size_t n : {20, 100, 5000, 70000, 3000000, 50, 9}) {
    p = static_cast<char*>(Reallocate(p, n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(memcmp(p, "012345678", 9), 0) << n;
  }
  Free(p);
  // Reused slots are dirty; AllocateZeroed must clear them.
  std::vector<void*> dirty;
  for (int i = 0; i < 1000; ++i) {
    dirty.push_back(Allocate(96));
    memset(dirty.back(), 0xff, 96);
  }
  for (void* d : dirty) Free(d);
  for (int i = 0; i < 1000; ++i) {
    auto* z = static_cast<unsigned char*>(AllocateZeroed(3, 32));
    for (int j = 0; j < 96; ++j) ASSERT_EQ(z[j], 0);
    dirty[i] = z;
  }
  for (void* d : dirty) Free(d);
  EXPECT_EQ(AllocateZeroed(SIZE_MAX / 2, 3), nullptr);
}

TEST(ThreadCache, CrossThreadFreesAreReused) {
  // A producer allocates, a consumer frees: the producer's spans must get
  // their slots back instead of growing without bound.
  constexpr int kRounds = 200, kBatch = 2000;
  std::vector<void*> batch(kBatch);
  const HeapStats before = GetHeapStats();
  for (int r = 0; r < kRounds; ++r) {
    for (auto& p : batch) {
      p = Allocate(64);
      memset(p, r, 64);
    }
    std::thread consumer([&] {
      for (void* p : batch) Free(p);
    });
    consumer.join();
  }
  const HeapStats after = GetHeapStats();
  EXPECT_EQ(after.mallocs - before.mallocs, uint64_t{kRounds} * kBatch);
  EXPECT_EQ(after.frees - before.frees, uint64_t{kRounds} * kBatch);
  // 2000 objects of 64 B fill 16 spans; allow slack, not 200 rounds' worth.
  EXPECT_LT(after.spans, before.spans + 64);
}

TEST(ThreadCache, ManyThreadsChurnAndFreeEachOthersObjects) {
  constexpr int kThreads = 8, kOps = 50000;
  std::vector<std::atomic<void*>> mailbox(256);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<void*> mine;
      for (int i = 0; i < kOps; ++i) {
        const size_t n = 8 + rng() % 1024;
        void* p = Allocate(n);
        Fill(p, 8, static_cast<uint8_t>(n));
        // Swap through the mailbox so that frees cross threads.
        void* q = mailbox[rng() % mailbox.size()].exchange(p);
        if (q != nullptr) Free(q);
        if (rng() % 4 == 0) mine.push_back(Allocate(rng() % 300));
        if (mine.size() > 100) {
          for (void* m : mine) Free(m);
          mine.clear();
        }
      }
      for (void* m : mine) Free(m);
    });
  }
  for (auto& th : threads) th.join();
  for (auto& m : mailbox) Free(m.exchange(nullptr));
}

TEST(ThreadCache, ThreadExitGivesItsSpansBack) {
  // The transfer caches' batches pin spans too: emptied before each count.
  ReleaseFreeMemory();
  const HeapStats before = GetHeapStats();
  std::vector<void*> kept;
  std::thread t([&] {
    std::vector<void*> all;
    for (int i = 0; i < 20000; ++i) all.push_back(Allocate(48));
    for (size_t i = 0; i < all.size(); ++i) {
      if (i % 1000 == 0) kept.push_back(all[i]); else Free(all[i]);
    }
  });
  t.join();
  ReleaseFreeMemory();
  const HeapStats mid = GetHeapStats();
  // Empty spans went back at exit; the 20 survivors pin at most 20 spans.
  EXPECT_LE(mid.spans, before.spans + 20);
  // Freed from another thread: onto its list, and back to their spans when
  // it gives them back.
  for (void* p : kept) Free(p);
  ReleaseFreeMemory();
  EXPECT_LE(GetHeapStats().spans, mid.spans);
}

// No span belongs to a thread: a free by another thread is a push onto the
// freeing thread's list, and that thread's next malloc of the class hands
// the slot out again.
TEST(ThreadCache, AFreeByAnotherThreadFeedsThatThreadsNextMalloc) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no freed slot (its quarantine)");
  void* p = Allocate(176);
  std::thread([p] {
    Free(p);
    EXPECT_EQ(Allocate(176), p);
    Free(p);
  }).join();
  ObjectInfo o;
  EXPECT_FALSE(FindObject(p, &o));
}

// A free goes on its class's list: the walk stops reporting the slot at
// once, and the class hands the slots out again last-freed first.
TEST(ThreadCache, FreedSlotsComeBackLastFreedFirstAndAreNotWalkedMeanwhile) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no freed slot (its quarantine)");
  void* p[3];
  for (auto& q : p) q = Allocate(80);
  Free(p[0]);
  Free(p[2]);
  size_t seen = 0;
  WalkHeap([&](const ObjectInfo& o) { seen += o.addr == reinterpret_cast<uintptr_t>(p[0]) || o.addr == reinterpret_cast<uintptr_t>(p[2]); });
  EXPECT_EQ(seen, 0u);
  EXPECT_EQ(Allocate(80), p[2]);
  EXPECT_EQ(Allocate(80), p[0]);
  WalkHeap([&](const ObjectInfo& o) { seen += o.addr == reinterpret_cast<uintptr_t>(p[0]) || o.addr == reinterpret_cast<uintptr_t>(p[2]); });
  EXPECT_EQ(seen, 2u);
  for (auto& q : p) Free(q);
}

uint64_t& KeyWord(void* p) { return static_cast<uint64_t*>(p)[1]; }

// A free slot holds the key in its second word (free_list.h). A live object
// that happens to hold it is freed like any other (by the slow path, which
// finds it on no list, in no transfer batch and out of its span), and a slot
// malloc hands out never holds the key.
TEST(ThreadCache, AnObjectHoldingTheKeyIsFreedLikeAnyOther) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no freed slot (its quarantine)");
  void* p = Allocate(48);
  KeyWord(p) = internal::g_free_key;
  ObjectInfo o;
  EXPECT_TRUE(FindObject(p, &o));
  Free(p);
  EXPECT_FALSE(FindObject(p, &o));
  void* again = Allocate(48);
  EXPECT_EQ(again, p);
  EXPECT_NE(KeyWord(again), internal::g_free_key);
  EXPECT_TRUE(FindObject(again, &o));
  Free(again);
}

// The same when the free takes the list past its length: the slot leaves
// with a batch for the transfer cache, where FindObject finds it free.
TEST(ThreadCache, AnObjectHoldingTheKeyIsFreedWhenTheListOverflows) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no freed slot (its quarantine)");
  const uint32_t max = internal::t_heap->cache[internal::SizeToClass(48)].max_length;
  std::vector<void*> fill(max + 64);
  for (void*& q : fill) q = Allocate(48);
  void* p = Allocate(48);
  ReleaseFreeMemory();  // this thread's list of the class: empty
  for (size_t i = 0; i < max; ++i) Free(fill[i]);  // full
  KeyWord(p) = internal::g_free_key;
  Free(p);
  ObjectInfo o;
  EXPECT_FALSE(FindObject(p, &o));
  for (size_t i = max; i < fill.size(); ++i) Free(fill[i]);
  for (void*& q : fill) {
    q = Allocate(48);
    EXPECT_NE(KeyWord(q), internal::g_free_key);
  }
  for (void* q : fill) Free(q);
}

// Freed by another thread, an object holding the key is a free like any
// other.
TEST(ThreadCache, AnObjectHoldingTheKeyIsFreedByAnotherThreadLikeAnyOther) {
  void* p = Allocate(48);
  void* keep = Allocate(48);
  KeyWord(p) = internal::g_free_key;
  std::thread([p] { Free(p); }).join();
  ObjectInfo o;
  EXPECT_FALSE(FindObject(p, &o));
  EXPECT_TRUE(FindObject(keep, &o));
  Free(keep);
}

// A thread's exit gives its lists' slots back to their spans: a span whose
// objects were all freed is not kept in use by them.
TEST(ThreadCache, ThreadExitGivesBackTheSlotsOnItsLists) {
  void* p[16];
  std::thread([&] {
    for (auto& q : p) q = Allocate(1024);
    for (auto& q : p) Free(q);  // all 16 fit on the class's list
  }).join();
  for (void* q : p) {
    const internal::Span* s = internal::g_page_map.Get(reinterpret_cast<uintptr_t>(q));
    if (s == nullptr || s->state != internal::SpanState::kSmall) continue;  // released: empty
    EXPECT_FALSE(s->SlotOut(s->SlotIndex(reinterpret_cast<uintptr_t>(q))));
    uint32_t out = 0;
    for (uint32_t w = 0; w < s->nwords(); ++w) out += internal::CountBits(s->bits[w].live.load());
    EXPECT_EQ(s->used, out);
  }
}

using ThreadCacheDeathTest = ::testing::Test;

TEST(ThreadCacheDeathTest, DoubleFreeEndsTheProcessNamingTheAddress) {
  void* p = Allocate(32);
  Free(p);
  char expect[64];
  snprintf(expect, sizeof expect, "double free at 0x%016lx", reinterpret_cast<unsigned long>(p));
  EXPECT_DEATH(Free(p), expect);
}

// Freed by a thread whose exit gave it back to its span, then again here:
// caught when this thread's list gives it back (free_list.h).
TEST(ThreadCacheDeathTest, DoubleFreeAcrossThreadsIsCaught) {
  void* p = Allocate(32);
  Allocate(32);  // keeps the span from emptying
  std::thread([p] { Free(p); }).join();
  EXPECT_DEATH(
      {
        Free(p);
        ReleaseFreeMemory();
      },
      "double free");
}

TEST(ThreadCacheDeathTest, FreeInsideAnObjectIsCaught) {
  char* p = static_cast<char*>(Allocate(64));
  EXPECT_DEATH(Free(p + 16), "inside an object");
  char* big = static_cast<char*>(Allocate(100000));
  EXPECT_DEATH(Free(big + 8192), "inside an object");
}

// A pointer past a span's last slot, at a slot boundary, has no live bit:
// the sampled free's slow path bounds the index by the bitmap, not by
// nslots, and still names the error.
TEST(ThreadCacheDeathTest, FreePastTheLastSlotIsInsideAnObject) {
  for (int c = 1; c < internal::kNumClasses; ++c) {
    void* p = Allocate(internal::g_classes[c].size);
    const internal::Span* s = internal::g_page_map.Get(reinterpret_cast<uintptr_t>(p));
    const uintptr_t tail = s->SlotAddress(s->nslots);
    if (tail < s->end()) {
      EXPECT_DEATH(Free(reinterpret_cast<void*>(tail)), "inside an object") << "class " << c;
      return;
    }
  }
  GTEST_SKIP() << "every class fills its spans exactly";
}

TEST(ThreadCacheDeathTest, FreeOfForeignMemoryIsCaught) {
  static int not_ours;
  EXPECT_DEATH(Free(&not_ours), "did not allocate");
  void* big = Allocate(1 << 20);
  Free(big);
  EXPECT_DEATH(Free(big), "double free");
}

}  // namespace
}  // namespace libdump
