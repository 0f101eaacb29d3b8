#include "remote_batch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "heap_walk.h"
#include "libdump/heap.h"
#include "page_map.h"

namespace libdump {
namespace {

using internal::g_page_map;
using internal::Span;

// The objects of the walk, without allocating from our heap (the set uses
// the process's malloc, which in these tests is not libdump).
std::set<uintptr_t> LiveObjects(bool stopped_walk) {
  std::set<uintptr_t> out;
  auto visit = [](const ObjectInfo& o, void* c) { static_cast<std::set<uintptr_t>*>(c)->insert(o.addr); };
  if (stopped_walk) {
    internal::ForEachObject(visit, &out);
  } else {
    WalkHeap(visit, &out);
  }
  return out;
}

bool PublishedRemotely(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const Span* s = g_page_map.Get(a);
  const uint32_t i = s->SlotIndex(a);
  return (s->remote[i >> 6].load(std::memory_order_acquire) >> (i & 63)) & 1;
}

// A thread that frees another thread's objects and then waits, alive, so
// that its batches are neither flushed by exit nor replaced by later frees.
class ParkedFreer {
 public:
  explicit ParkedFreer(std::vector<void*> victims)
      : thread_([this, v = std::move(victims)] {
          for (void* p : v) Free(p);
          freed_.store(true);
          while (!release_.load()) std::this_thread::yield();
        }) {
    while (!freed_.load()) std::this_thread::yield();
  }
  void Exit() {
    release_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> freed_{false}, release_{false};
  std::thread thread_;
};

TEST(RemoteBatch, BatchedFreesAreInvisibleToTheWalkBeforeTheyArePublished) {
  // 64 slots of one class in allocation order: the freer batches runs of
  // them per bitmap word, and its last word stays batched while it waits.
  std::vector<void*> mine;
  for (int i = 0; i < 300; ++i) mine.push_back(Allocate(48));
  std::vector<void*> victims, kept;
  for (size_t i = 0; i < mine.size(); ++i) (i % 3 == 0 ? kept : victims).push_back(mine[i]);
  ParkedFreer freer(victims);
  // The batching really holds some of them back (otherwise this test would
  // not test it): the last word's frees are not in the span yet.
  EXPECT_FALSE(PublishedRemotely(victims.back()));
  for (bool stopped : {false, true}) {
    const std::set<uintptr_t> live = LiveObjects(stopped);
    for (void* p : victims) {
      EXPECT_EQ(live.count(reinterpret_cast<uintptr_t>(p)), 0u) << p;
      ObjectInfo info;
      EXPECT_FALSE(FindObject(p, &info)) << p;
    }
    for (void* p : kept) EXPECT_EQ(live.count(reinterpret_cast<uintptr_t>(p)), 1u) << p;
  }
  freer.Exit();
  for (void* p : kept) Free(p);
}

TEST(RemoteBatch, ThreadExitPublishesTheBatches) {
  std::vector<void*> victims;
  for (int c = 0; c < 20; ++c) {
    for (int i = 0; i < 10; ++i) victims.push_back(Allocate(16 + 48 * c));
  }
  void* pin = Allocate(16);  // keeps a span from emptying and being released
  ParkedFreer freer(victims);
  size_t unpublished = 0;
  for (void* p : victims) unpublished += !PublishedRemotely(p);
  EXPECT_GT(unpublished, 0u);
  freer.Exit();
  // The owner has not allocated since, so nothing was folded in yet: every
  // free sits in its span's remote bits.
  for (void* p : victims) EXPECT_TRUE(PublishedRemotely(p)) << p;
  const std::set<uintptr_t> live = LiveObjects(false);
  for (void* p : victims) EXPECT_EQ(live.count(reinterpret_cast<uintptr_t>(p)), 0u);
  Free(pin);
}

TEST(RemoteBatch, PublishedSlotsAreReusedByTheOwner) {
  std::vector<void*> first;
  for (int i = 0; i < 2000; ++i) first.push_back(Allocate(96));
  std::thread([&] {
    for (void* p : first) Free(p);
  }).join();
  // The owner folds the remote frees in: allocating the same number again
  // reuses the slots rather than taking fresh spans.
  const HeapStats before = GetHeapStats();
  std::vector<void*> second;
  for (int i = 0; i < 2000; ++i) second.push_back(Allocate(96));
  EXPECT_LE(GetHeapStats().spans, before.spans + 2);
  for (void* p : second) Free(p);
}

// Frees crossing threads in random order while the running program is
// walked: a walk never reports an object freed before it started, and
// always reports one that stays live throughout (the sequence count keeps
// batch entries from being read torn).
TEST(RemoteBatch, WalkOfARunningProgramIsExactForSettledObjects) {
  constexpr int kObjects = 20000;
  std::vector<void*> objs;
  std::mt19937 rng(11);
  for (int i = 0; i < kObjects; ++i) objs.push_back(Allocate(16 + rng() % 1000));
  std::vector<void*> doomed, survivors;
  for (void* p : objs) (rng() % 2 ? doomed : survivors).push_back(p);
  std::shuffle(doomed.begin(), doomed.end(), rng);
  std::atomic<size_t> freed{0};
  std::thread freer([&] {
    for (size_t i = 0; i < doomed.size(); ++i) {
      Free(doomed[i]);
      freed.store(i + 1, std::memory_order_release);
    }
  });
  for (int round = 0; round < 20; ++round) {
    const size_t settled = freed.load(std::memory_order_acquire);
    const std::set<uintptr_t> live = LiveObjects(false);
    for (size_t i = 0; i < settled; ++i) ASSERT_EQ(live.count(reinterpret_cast<uintptr_t>(doomed[i])), 0u);
    for (void* p : survivors) ASSERT_EQ(live.count(reinterpret_cast<uintptr_t>(p)), 1u);
  }
  freer.join();
  for (void* p : survivors) Free(p);
}

using RemoteBatchDeathTest = ::testing::Test;

TEST(RemoteBatchDeathTest, DoubleFreeInsideABatchIsCaught) {
  void* p = Allocate(64);
  Allocate(64);  // keeps the span from emptying
  EXPECT_DEATH(std::thread([p] {
                 Free(p);
                 Free(p);
               }).join(),
               "double free");
}

}  // namespace
}  // namespace libdump
