#include "stacked_slots.h"

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
#include "recent_frees.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump {
namespace {

using internal::g_page_map;
using internal::Span;
using internal::StackedSlots;

constexpr size_t kSize = 96;

uintptr_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A thread that allocates `n` objects of kSize, frees the even ones (onto its
// class's stack) and then waits, alive, until released: its stack stays as
// it was while the test looks at it from another thread.
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

// The taken copy and the search of the live stacks give the same answers:
// exactly the freed (even) objects are stacked, though their live bits are
// still set.
TEST(StackedSlots, ATakenCopyAndTheLiveStacksAgree) {
  ParkedThread t(6);
  StackedSlots taken;
  taken.Take();
  const StackedSlots live;
  const int c = internal::SizeToClass(kSize);
  for (size_t i = 0; i < t.objects().size(); ++i) {
    const uintptr_t p = Addr(t.objects()[i]);
    const Span* s = g_page_map.Get(p);
    EXPECT_TRUE(s->SlotLive(s->SlotIndex(p))) << i;
    EXPECT_EQ(taken.Contains(p, c), i % 2 == 0) << i;
    EXPECT_EQ(live.Contains(p, c), i % 2 == 0) << i;
  }
  // Collect names the stacked slots of one span, and nothing else.
  const uintptr_t first = Addr(t.objects()[0]);
  const Span* s = g_page_map.Get(first);
  for (const StackedSlots* stacked : {static_cast<const StackedSlots*>(&taken), &live}) {
    uint64_t bits[internal::kBitmapWords] = {};
    stacked->Collect(s, bits);
    uint64_t expect[internal::kBitmapWords] = {};
    for (size_t i = 0; i < t.objects().size(); i += 2) {
      const uintptr_t p = Addr(t.objects()[i]);
      if (g_page_map.Get(p) != s) continue;
      const uint32_t k = s->SlotIndex(p);
      expect[k >> 6] |= uint64_t{1} << (k & 63);
    }
    for (uint32_t w = 0; w < internal::kBitmapWords; ++w) EXPECT_EQ(bits[w], expect[w]) << w;
  }
  taken.Clear();
  EXPECT_TRUE(taken.Contains(first, c));  // cleared: it reads the stacks again
}

// The walk and FindObject subtract another thread's stacked slots, and report
// its live ones.
TEST(StackedSlots, TheWalkAndFindObjectSkipAnotherThreadsStackedSlots) {
  ParkedThread t(6);
  std::vector<uintptr_t> walked;
  WalkHeap([&](const ObjectInfo& o) { walked.push_back(o.addr); });
  std::vector<uintptr_t> walked_stopped;
  internal::ForEachObject([](const ObjectInfo& o, void* v) { static_cast<std::vector<uintptr_t>*>(v)->push_back(o.addr); },
                          &walked_stopped);
  for (size_t i = 0; i < t.objects().size(); ++i) {
    const uintptr_t p = Addr(t.objects()[i]);
    const bool live = i % 2 == 1;
    EXPECT_EQ(std::count(walked.begin(), walked.end(), p), live) << i;
    EXPECT_EQ(std::count(walked_stopped.begin(), walked_stopped.end(), p), live) << i;
    ObjectInfo o;
    EXPECT_EQ(FindObject(t.objects()[i], &o), live) << i;
    EXPECT_EQ(FindObject(static_cast<char*>(t.objects()[i]) + 8, &o), live) << i;  // interior
  }
}

// OnStack is the exact test behind the key: a freed slot is on its thread's
// stack until malloc hands it out again, and on no other thread's.
TEST(StackedSlots, OnStackFollowsFreeAndMalloc) {
  LIBDUMP_SKIP_UNDER_DEBUG_HEAP("hands out no stacked slot (its quarantine)");
  void* p = Allocate(kSize);
  const int c = internal::SizeToClass(kSize);
  internal::ThreadHeap* mine = internal::t_heap;
  EXPECT_FALSE(internal::OnStack(mine, c, Addr(p)));
  Free(p);
  EXPECT_TRUE(internal::OnStack(mine, c, Addr(p)));
  std::thread([&] {
    Free(Allocate(kSize));
    EXPECT_FALSE(internal::OnStack(internal::t_heap, c, Addr(p)));
  }).join();
  EXPECT_EQ(Allocate(kSize), p);
  EXPECT_FALSE(internal::OnStack(mine, c, Addr(p)));
  Free(p);
}

using StackedSlotsDeathTest = ::testing::Test;

std::string DoubleFreeAt(const void* p) {
  char expect[64];
  snprintf(expect, sizeof expect, "double free at 0x%016lx", static_cast<unsigned long>(Addr(p)));
  return expect;
}

// A second free of a slot deep in the stack, not only of its top.
TEST(StackedSlotsDeathTest, ASecondFreeOfASlotUnderOthersIsCaught) {
  std::vector<void*> p;
  for (int i = 0; i < 5; ++i) p.push_back(Allocate(kSize));
  for (void* q : p) Free(q);
  EXPECT_DEATH(Free(p[1]), DoubleFreeAt(p[1]));
}

// A second free from another thread, while the first free's thread still
// has the slot on its stack: caught when the owner folds the remote free in,
// here at its next free into the span (CheckRemoteFrees).
TEST(StackedSlotsDeathTest, ASecondFreeFromAnotherThreadIsCaught) {
  void* p = Allocate(kSize);
  void* keep = Allocate(kSize);  // keeps the span in use
  Free(p);
  EXPECT_DEATH(
      {
        std::thread([p] { Free(p); }).join();
        Free(keep);
      },
      DoubleFreeAt(p));
  Free(keep);
}

}  // namespace
}  // namespace libdump
