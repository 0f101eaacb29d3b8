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
  const HeapStats mid = GetHeapStats();
  // Empty spans went back at exit; the 20 survivors pin at most 20 spans.
  EXPECT_LE(mid.spans, before.spans + 20);
  // Freed from another thread, the orphaned spans' objects are folded in by
  // the next thread that adopts them.
  for (void* p : kept) Free(p);
  std::thread adopter([] {
    for (int i = 0; i < 1000; ++i) Free(Allocate(48));
  });
  adopter.join();
  EXPECT_LE(GetHeapStats().spans, mid.spans);
}

// Larson's server churn: a worker inherits its predecessor's objects. Its
// frees into the exited thread's spans make them its own (so they are local
// and their slots come back to it), as long as it allocates that class too;
// a thread that only frees the class leaves the orphans to an adopter.
TEST(ThreadCache, FreeingIntoAnExitedThreadsSpanTakesItOverIfTheClassIsInUse) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no stacked slot (its quarantine)");
  constexpr size_t kSize = 176;
  void* mine = Allocate(kSize);  // this thread allocates the class
  std::vector<void*> theirs;
  std::thread([&] {
    for (int i = 0; i < 8; ++i) theirs.push_back(Allocate(kSize));
  }).join();
  const auto span_of = [](void* p) { return internal::g_page_map.Get(reinterpret_cast<uintptr_t>(p)); };
  // Two of its objects that share a span (the thread may have adopted an
  // orphan with few free slots before starting one of its own).
  size_t k = 0;
  while (k + 1 < theirs.size() && span_of(theirs[k]) != span_of(theirs[k + 1])) ++k;
  ASSERT_LT(k + 1, theirs.size());
  void* a = theirs[k];
  void* b = theirs[k + 1];
  internal::Span* s = span_of(a);
  ASSERT_EQ(s->owner.load(), nullptr);
  ASSERT_NE(span_of(mine), s);

  std::thread([&] {
    void* other = Allocate(64);  // a heap, but no span of the class
    Free(a);
    EXPECT_EQ(s->owner.load(), nullptr);
    Free(other);
  }).join();

  Free(b);
  EXPECT_EQ(s->owner.load(), internal::t_heap);
  // The free was local: b went on this thread's stack and comes back first.
  // a's remote free, made before the takeover, was folded in: not live.
  void* again = Allocate(kSize);
  EXPECT_EQ(again, b);
  EXPECT_FALSE(s->SlotLive(s->SlotIndex(reinterpret_cast<uintptr_t>(a))));
  Free(again);
  for (void* p : theirs) {
    if (p != a && p != b) Free(p);
  }
  Free(mine);
}

// A local free goes on its class's stack of recent frees (recent_frees.h):
// the walk stops reporting the slot at once, and the class hands the slots
// out again last-freed first, before any slot of the cached bitmap word.
TEST(ThreadCache, FreedSlotsComeBackLastFreedFirstAndAreNotWalkedMeanwhile) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no stacked slot (its quarantine)");
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

// A stacked slot keeps its live bit; the key in its first word tells it from
// a live object (recent_frees.h). A live object that happens to hold the key
// is freed like any other (by the slow path, which finds it on no stack):
// onto its class's stack, and a slot malloc hands out never holds the key.
TEST(ThreadCache, AnObjectHoldingTheKeyIsFreedLikeAnyOther) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no stacked slot (its quarantine)");
  void* p = Allocate(48);
  *static_cast<uint64_t*>(p) = internal::g_stacked_key;
  ObjectInfo o;
  EXPECT_TRUE(FindObject(p, &o));
  Free(p);
  EXPECT_FALSE(FindObject(p, &o));
  void* again = Allocate(48);
  EXPECT_EQ(again, p);
  EXPECT_NE(*static_cast<uint64_t*>(again), internal::g_stacked_key);
  EXPECT_TRUE(FindObject(again, &o));
  Free(again);
}

// The same with the class's stack full: the slot goes back to the bitmap,
// and without the key, or a remote free of its next object would take that
// object for a stacked one.
TEST(ThreadCache, AnObjectHoldingTheKeyLeavesItWhenTheStackIsFull) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no stacked slot (its quarantine)");
  std::vector<void*> fill(internal::kRecentDepth);
  for (void*& q : fill) q = Allocate(48);
  void* p = Allocate(48);
  for (void* q : fill) Free(q);  // the class's stack: full
  *static_cast<uint64_t*>(p) = internal::g_stacked_key;
  Free(p);
  ObjectInfo o;
  EXPECT_FALSE(FindObject(p, &o));
  EXPECT_NE(*static_cast<uint64_t*>(p), internal::g_stacked_key);
}

// Freed by another thread, an object holding the key is a free like any
// other: the owner, folding the free in, finds the slot on no stack and
// clears the key (before, the freeing thread took the key for a stacked
// slot and ended the process).
TEST(ThreadCache, AnObjectHoldingTheKeyIsFreedByAnotherThreadLikeAnyOther) {
  void* p = Allocate(48);
  void* keep = Allocate(48);  // the owner's next free into the span folds p's free in
  *static_cast<uint64_t*>(p) = internal::g_stacked_key;
  std::thread([p] { Free(p); }).join();
  Free(keep);
  ObjectInfo o;
  EXPECT_FALSE(FindObject(p, &o));
  EXPECT_NE(*static_cast<uint64_t*>(p), internal::g_stacked_key);
}

// Stacked slots stay reserved in their span's `used`; a thread's exit must
// give them back, or a span whose objects were all freed stays in use. The
// span is checked itself, not the count of spans: the thread may adopt an
// orphan that an earlier test's thread left (and release one emptied by
// remote frees on the way).
TEST(ThreadCache, ThreadExitGivesBackTheSlotsOnItsStacks) {
  void* p[16];
  std::thread([&] {
    for (auto& q : p) q = Allocate(1024);
    for (auto& q : p) Free(q);  // all 16 fit on the class's stack
  }).join();
  for (void* q : p) {
    const internal::Span* s = internal::g_page_map.Get(reinterpret_cast<uintptr_t>(q));
    if (s == nullptr || s->state != internal::SpanState::kSmall) continue;  // released: empty
    // An orphan, kept for live objects of an earlier test: those alone.
    uint32_t live = 0;
    for (uint32_t w = 0; w < s->nwords(); ++w) {
      live += internal::CountBits(s->bits[w].live.load() & ~s->remote[w].load());
    }
    EXPECT_EQ(s->owner.load(), nullptr);
    EXPECT_EQ(s->used, live);
  }
}

// The owner's first free into a span with remote frees pending folds them
// into the live bits, so that its later frees into the span never read the
// remote words other threads write (the free fast path does not).
TEST(ThreadCache, ALocalFreeFoldsInTheSpansPendingRemoteFrees) {
  void* a = Allocate(48);
  void* b = Allocate(48);
  void* c = Allocate(48);
  const internal::Span* s = internal::g_page_map.Get(reinterpret_cast<uintptr_t>(a));
  ASSERT_EQ(s, internal::g_page_map.Get(reinterpret_cast<uintptr_t>(b)));
  std::thread([a] { Free(a); }).join();  // published at the thread's exit
  const uint32_t ia = s->SlotIndex(reinterpret_cast<uintptr_t>(a));
  const uint64_t ma = uint64_t{1} << (ia & 63);
  ASSERT_NE(s->remote_pending.load(), 0u);
  ASSERT_NE(s->remote[ia >> 6].load() & ma, 0u);
  Free(b);
  EXPECT_EQ(s->remote_pending.load(), 0u);
  EXPECT_EQ(s->remote[ia >> 6].load() & ma, 0u);
  EXPECT_EQ(s->bits[ia >> 6].live.load() & ma, 0u);
  ObjectInfo info;
  EXPECT_FALSE(FindObject(a, &info));
  EXPECT_FALSE(FindObject(b, &info));
  EXPECT_TRUE(FindObject(c, &info));
  Free(c);
}

using ThreadCacheDeathTest = ::testing::Test;

TEST(ThreadCacheDeathTest, DoubleFreeEndsTheProcessNamingTheAddress) {
  void* p = Allocate(32);
  Free(p);
  char expect[64];
  snprintf(expect, sizeof expect, "double free at 0x%016lx", reinterpret_cast<unsigned long>(p));
  EXPECT_DEATH(Free(p), expect);
}

TEST(ThreadCacheDeathTest, DoubleFreeAcrossThreadsIsCaught) {
  void* p = Allocate(32);
  Allocate(32);  // keeps the span from emptying
  std::thread([p] { Free(p); }).join();
  EXPECT_DEATH(Free(p), "double free");
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
