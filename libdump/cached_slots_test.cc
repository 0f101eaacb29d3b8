#include "cached_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

#include "heap_walk.h"
#include "testing/debug_heap_testutil.h"
#include "libdump/heap.h"
#include "page_map.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump {
namespace {

using internal::g_page_map;
using internal::Span;
using internal::CachedSlots;

constexpr size_t kSize = 96;

uintptr_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A thread that allocates `n` objects of kSize, frees the even ones (onto its
// class's list) and then waits, alive, until released: its list stays as it
// was while the test looks at it from another thread.
class ParkedThread {
 public:
  explicit ParkedThread(int n) {
    std::promise<void> ready;
    std::future<void> is_ready = ready.get_future();
    thread_ = std::thread([this, n, &ready] {
      for (int i = 0; i < n; ++i) objects_.push_back(Allocate(kSize));
      for (int i = 0; i < n; i += 2) Free(objects_[i]);
      ready.set_value();
      release_.get_future().wait();
      for (int i = 1; i < n; i += 2) Free(objects_[i]);
    });
    is_ready.wait();
  }
  ~ParkedThread() {
    release_.set_value();
    thread_.join();
  }
  const std::vector<void*>& objects() const { return objects_; }

 private:
  std::vector<void*> objects_;
  std::promise<void> release_;
  std::thread thread_;
};

// Taken with every heap, the copy holds exactly the freed (even) objects of
// another thread, though their live bits are still set; taken among running
// threads it does not follow that thread's lists, nor does an untaken
// question, and the slots read as live.
TEST(CachedSlots, ACopyOfEveryHeapHoldsAnotherThreadsListedSlots) {
  ParkedThread t(6);
  CachedSlots every;
  every.Take(/*every_heap=*/true);
  CachedSlots own;
  own.Take(/*every_heap=*/false);
  const CachedSlots untaken;
  const int c = internal::SizeToClass(kSize);
  for (size_t i = 0; i < t.objects().size(); ++i) {
    const uintptr_t p = Addr(t.objects()[i]);
    const Span* s = g_page_map.Get(p);
    EXPECT_TRUE(s->SlotOut(s->SlotIndex(p))) << i;
    EXPECT_EQ(every.Contains(p, c), i % 2 == 0) << i;
    EXPECT_FALSE(own.Contains(p, c)) << i;
    EXPECT_FALSE(untaken.Contains(p, c)) << i;
  }
  // Collect names the freed objects of one span and never a live one; the
  // other slots it names are free ones the thread's list holds too (a
  // refill takes a whole batch).
  const uintptr_t first = Addr(t.objects()[0]);
  const Span* s = g_page_map.Get(first);
  uint64_t bits[internal::kBitmapWords] = {};
  every.Collect(s, bits);
  for (size_t i = 0; i < t.objects().size(); ++i) {
    const uintptr_t p = Addr(t.objects()[i]);
    if (g_page_map.Get(p) != s) continue;
    const uint32_t k = s->SlotIndex(p);
    EXPECT_EQ((bits[k >> 6] >> (k & 63)) & 1, i % 2 == 0 ? 1u : 0u) << i;
  }
  for (uint32_t w = 0; w < internal::kBitmapWords; ++w) {
    for (uint64_t b = bits[w]; b != 0; b &= b - 1) {
      const uint32_t k = w * 64 + static_cast<uint32_t>(__builtin_ctzll(b));
      EXPECT_TRUE(s->SlotOut(k)) << k;
      EXPECT_TRUE(every.Contains(s->SlotAddress(k), c)) << k;
    }
  }
  every.Clear();
  EXPECT_FALSE(every.Contains(first, c));  // cleared: an untaken question again
}

// The walk of a stopped world (ForEachObject) subtracts another thread's
// listed slots and reports its live ones.
TEST(CachedSlots, TheStoppedWalkSkipsAnotherThreadsListedSlots) {
  ParkedThread t(6);
  std::vector<uintptr_t> walked;
  internal::ForEachObject([](const ObjectInfo& o, void* v) { static_cast<std::vector<uintptr_t>*>(v)->push_back(o.addr); },
                          &walked);
  for (size_t i = 0; i < t.objects().size(); ++i) {
    const uintptr_t p = Addr(t.objects()[i]);
    EXPECT_EQ(std::count(walked.begin(), walked.end(), p), i % 2 == 1) << i;
  }
}

// OnList is the exact test behind the key: a freed slot is on its thread's
// list until malloc hands it out again, and on no other thread's.
TEST(CachedSlots, OnListFollowsFreeAndMalloc) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no freed slot (its quarantine)");
  void* p = Allocate(kSize);
  const int c = internal::SizeToClass(kSize);
  internal::ThreadHeap* mine = internal::t_heap;
  EXPECT_FALSE(internal::OnList(mine, c, p));
  Free(p);
  EXPECT_TRUE(internal::OnList(mine, c, p));
  std::thread([&] {
    Free(Allocate(kSize));
    EXPECT_FALSE(internal::OnList(internal::t_heap, c, p));
  }).join();
  EXPECT_EQ(Allocate(kSize), p);
  EXPECT_FALSE(internal::OnList(mine, c, p));
  Free(p);
}

using CachedSlotsDeathTest = ::testing::Test;

std::string DoubleFreeAt(const void* p) {
  char expect[64];
  snprintf(expect, sizeof expect, "double free at 0x%016lx", static_cast<unsigned long>(Addr(p)));
  return expect;
}

// A second free of a slot deep in the list, not only of its head: caught
// when malloc reaches its second copy on the list, before it hands the slot
// out twice (free_list.h).
TEST(CachedSlotsDeathTest, ASecondFreeOfASlotUnderOthersIsCaught) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("catches it at the free (DebugHeapDeathTest)");
  std::vector<void*> p;
  for (int i = 0; i < 5; ++i) p.push_back(Allocate(kSize));
  for (void* q : p) Free(q);
  EXPECT_DEATH(
      {
        Free(p[1]);
        for (int i = 0; i < 8; ++i) Allocate(kSize);
      },
      DoubleFreeAt(p[1]));
}

// A second free of a slot that left with a batch for the transfer cache:
// whichever of its two copies malloc reaches second has no key.
TEST(CachedSlotsDeathTest, ASecondFreeOfASlotInTheTransferCacheIsCaught) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("keeps no transfer cache");
  const uint32_t max = internal::t_heap->cache[internal::SizeToClass(kSize)].max_length;
  std::vector<void*> p(max + 1);
  for (void*& q : p) q = Allocate(kSize);
  ReleaseFreeMemory();  // the list and the transfer caches: empty
  for (void* q : p) Free(q);  // the last free gives a batch, p[max] first
  EXPECT_DEATH(
      {
        Free(p[max]);
        for (uint32_t i = 0; i < 3 * max; ++i) Allocate(kSize);
      },
      DoubleFreeAt(p[max]));
}

// A second free of a slot back in its span: caught when the list it went
// onto gives it back (its live bit is clear).
TEST(CachedSlotsDeathTest, ASecondFreeOfASlotBackInItsSpanIsCaughtWhenItGoesBack) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("catches it at the free (DebugHeapDeathTest)");
  void* p = Allocate(kSize);
  void* keep = Allocate(kSize);  // keeps the span in use
  Free(p);
  ReleaseFreeMemory();  // p: back in its span
  EXPECT_DEATH(
      {
        Free(p);
        ReleaseFreeMemory();
      },
      DoubleFreeAt(p));
  Free(keep);
}

}  // namespace
}  // namespace libdump
