// The debug heap (LIBDUMP_DEBUG_HEAP=1), on for this whole binary: set
// before its first allocation, which is the first test's (gtest itself
// allocates with the C library's malloc).
#include "debug_heap.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "libdump/heap.h"
#include "thread_cache.h"
#include "size_class.h"

namespace libdump {
namespace {

const bool g_env_set = setenv("LIBDUMP_DEBUG_HEAP", "1", 1) == 0;

// A slot freed stays out of circulation until its class's quarantine
// (QuarantineDepth slots) has taken that many more frees.
TEST(DebugHeap, AFreedSlotWaitsInQuarantine) {
  ASSERT_TRUE(g_env_set);
  Free(Allocate(100));  // the heap exists: the flag was read
  ASSERT_TRUE(internal::g_debug_heap);
  const int c = internal::SizeToClass(100);
  const uint32_t depth = internal::QuarantineDepth(internal::g_classes[c].size);
  void* first = Allocate(100);
  Free(first);
  std::set<void*> seen;
  for (uint32_t i = 0; i + 1 < depth; ++i) {
    void* p = Allocate(100);
    EXPECT_NE(p, first) << "reused after " << i << " frees";
    seen.insert(p);
    Free(p);
  }
  EXPECT_GT(seen.size(), 1u) << "malloc handed out the last freed slot";
}

TEST(DebugHeap, FreedSlotsArePoisonedAndHandedOutPoisoned) {
  unsigned char* p = static_cast<unsigned char*>(Allocate(64));
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(p[i], internal::kPoisonByte) << i;
  std::memset(p, 7, 64);
  Free(p);
  for (size_t i = 16; i < 64; ++i) EXPECT_EQ(p[i], internal::kPoisonByte) << i;
  EXPECT_EQ(reinterpret_cast<uint64_t*>(p)[0], internal::kPoisonWord);
  EXPECT_EQ(reinterpret_cast<uint64_t*>(p)[1], internal::g_free_key);
}

TEST(DebugHeap, CountsAndWalkStayExact) {
  const HeapStats before = GetHeapStats();
  std::vector<void*> kept;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 300; ++i) kept.push_back(Allocate(16 + (i % 40) * 24));
    for (size_t i = 0; i < kept.size(); i += 2) Free(kept[i]);
    std::vector<void*> left;
    for (size_t i = 1; i < kept.size(); i += 2) left.push_back(kept[i]);
    kept.swap(left);
  }
  const HeapStats after = GetHeapStats();
  EXPECT_EQ(after.live_objects - before.live_objects, kept.size());
  EXPECT_EQ(after.mallocs - after.frees, kept.size() + before.mallocs - before.frees);
  size_t walked = 0;
  std::set<uintptr_t> mine;
  for (void* p : kept) mine.insert(reinterpret_cast<uintptr_t>(p));
  WalkHeap([&](const ObjectInfo& o) { walked += mine.count(o.addr); });
  EXPECT_EQ(walked, kept.size());
  for (void* p : kept) Free(p);
}

// Heap samples go on: the debug heap keeps the countdown apart.
TEST(DebugHeap, SamplingStillSamples) {
  SetSampleInterval(4096);
  std::vector<void*> v;
  for (int i = 0; i < 2000; ++i) v.push_back(Allocate(64));
  size_t sampled = 0;
  for (void* p : v) sampled += IsSampled(p);
  SetSampleInterval(0);
  for (void* p : v) Free(p);
  EXPECT_GT(sampled, 5u);
  EXPECT_LT(sampled, 200u);
}

using DebugHeapDeathTest = ::testing::Test;

TEST(DebugHeapDeathTest, AWriteAfterFreeIsCaughtWhenTheSlotLeavesQuarantine) {
  EXPECT_DEATH(
      {
        char* p = static_cast<char*>(Allocate(100));
        Free(p);
        p[20] = 1;
        for (int i = 0; i < 100; ++i) Free(Allocate(100));
      },
      "libdump: write after free \\(byte 20 of a freed 112-byte slot\\) at 0x");
}

// After quarantine the slot is free in its span's bitmap; the write is
// caught when malloc hands the slot out or the span goes back to the page
// heap, whichever comes first.
TEST(DebugHeapDeathTest, AWriteAfterEvictionIsCaughtLater) {
  EXPECT_DEATH(
      {
        char* p = static_cast<char*>(Allocate(4000));
        std::vector<void*> v;
        for (int i = 0; i < 8; ++i) v.push_back(Allocate(4000));
        Free(p);
        for (void* q : v) Free(q);  // p leaves the quarantine (8 slots of 4 KiB)
        p[0] = 1;
        v.clear();
        for (int i = 0; i < 200; ++i) v.push_back(Allocate(4000));
        for (void* q : v) Free(q);
        for (int i = 0; i < 200; ++i) Free(Allocate(4000));
      },
      "libdump: write after free \\(byte 0 of a freed 4096-byte slot\\)");
}

TEST(DebugHeapDeathTest, AWriteAfterARemoteFreeIsCaught) {
  EXPECT_DEATH(
      {
        char* p = static_cast<char*>(Allocate(48));
        std::vector<void*> keep;
        for (int i = 0; i < 70; ++i) keep.push_back(Allocate(48));
        std::thread([p] { Free(p); }).join();
        p[40] = 1;
        for (int i = 0; i < 2000; ++i) keep.push_back(Allocate(48));
      },
      "write after free \\(byte 40 of a freed 48-byte slot\\)");
}

TEST(DebugHeapDeathTest, ADoubleFreeIsCaught) {
  void* p = Allocate(200);
  Free(p);
  EXPECT_DEATH(Free(p), "libdump: double free at 0x");
  // Out of quarantine too: the slot is free in its bitmap.
  for (int i = 0; i < 200; ++i) Free(Allocate(200));
  EXPECT_DEATH(Free(p), "double free");
}

}  // namespace
}  // namespace libdump
