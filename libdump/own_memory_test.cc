#include "own_memory.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "libdump/heap.h"
#include "libdump/typed.h"
#include "page_map.h"
#include "span.h"
#include "thread_cache.h"

namespace libdump::internal {
namespace {

uint32_t TypeOf(const void* p) {
  ObjectInfo o{};
  EXPECT_TRUE(FindObject(p, &o));
  return o.type_id;
}

TEST(OwnMemory, AllocationsInsideAComponentAreTypedAsItsOwn) {
  void* before = Allocate(48);
  void* small;
  void* large;
  {
    const OwnScope own(OwnComponent::kSymbolizer);
    small = Allocate(48);
    large = Allocate(1 << 20);  // the large path (AllocateSlow), not AllocateSampled
  }
  void* after = Allocate(48);
  const uint32_t id = OwnTypeId(OwnComponent::kSymbolizer);
  ASSERT_NE(id, 0u);
  EXPECT_TRUE(IsOwnType(id));
  EXPECT_EQ(std::string_view(FindType(id)->name), "libdump: symbolizer");
  EXPECT_EQ(TypeOf(small), id);
  EXPECT_EQ(TypeOf(large), id);
  EXPECT_EQ(TypeOf(before), 0u);
  EXPECT_EQ(TypeOf(after), 0u);
  for (void* p : {before, small, large, after}) Free(p);
}

TEST(OwnMemory, NestedComponentsRestoreTheOuterOne) {
  void* outer;
  void* inner;
  void* outer_again;
  {
    const OwnScope a(OwnComponent::kDumpWriter);
    outer = Allocate(24);
    {
      const OwnScope b(OwnComponent::kDumpBuffer);
      inner = Allocate(24);
    }
    outer_again = Allocate(24);
  }
  EXPECT_EQ(TypeOf(outer), OwnTypeId(OwnComponent::kDumpWriter));
  EXPECT_EQ(TypeOf(inner), OwnTypeId(OwnComponent::kDumpBuffer));
  EXPECT_EQ(TypeOf(outer_again), OwnTypeId(OwnComponent::kDumpWriter));
  EXPECT_EQ(t_own_component, OwnComponent::kNone);
  for (void* p : {outer, inner, outer_again}) Free(p);
}

TEST(OwnMemory, AFreedOwnSlotComesBackUntyped) {
  // Churn through one size class inside and outside: every slot the program
  // gets after the component ends is its own, whatever held it before.
  std::vector<void*> own;
  {
    const OwnScope s(OwnComponent::kProfiler);
    for (int i = 0; i < 200; ++i) own.push_back(Allocate(64));
  }
  for (void* p : own) Free(p);
  std::vector<void*> mine;
  for (int i = 0; i < 200; ++i) mine.push_back(Allocate(64));
  for (void* p : mine) EXPECT_EQ(TypeOf(p), 0u);
  for (void* p : mine) Free(p);
}

// libdump's own small objects live in spans of their own: a program's page
// never holds one, so it keeps its tag (the free fast path) while libdump's
// tables live, and an own slot never reaches a thread's list.
TEST(OwnMemory, OwnObjectsLiveInSpansOfTheirOwn) {
  std::vector<void*> own, mine;
  for (int i = 0; i < 300; ++i) {
    {
      const OwnScope s(OwnComponent::kProfiler);
      own.push_back(Allocate(48));
    }
    mine.push_back(Allocate(48));
  }
  for (void* p : own) {
    const Span* s = g_page_map.Get(reinterpret_cast<uintptr_t>(p));
    ASSERT_TRUE(s->own);
    EXPECT_EQ(g_page_map.Tag(reinterpret_cast<uintptr_t>(p)), 0u);
  }
  for (void* p : mine) {
    const Span* s = g_page_map.Get(reinterpret_cast<uintptr_t>(p));
    ASSERT_FALSE(s->own);
    EXPECT_NE(g_page_map.Tag(reinterpret_cast<uintptr_t>(p)), 0u);
    EXPECT_EQ(TypeOf(p), 0u);
  }
  const int c = SizeToClass(48);
  for (void* p : own) {
    Free(p);
    EXPECT_FALSE(OnList(t_heap, c, p)) << "an own slot went to the thread's list";
    ObjectInfo o{};
    EXPECT_FALSE(FindObject(p, &o)) << "a freed own slot is still an object";
  }
  for (void* p : mine) Free(p);
}

TEST(OwnMemory, EveryComponentHasANamedOwnType) {
  for (uint8_t c = 1; c < static_cast<uint8_t>(OwnComponent::kCount); ++c) {
    const uint32_t id = OwnTypeId(static_cast<OwnComponent>(c));
    ASSERT_NE(id, 0u);
    EXPECT_TRUE(IsOwnType(id));
    EXPECT_EQ(std::string_view(FindType(id)->name).substr(0, 9), "libdump: ");
  }
  EXPECT_FALSE(IsOwnType(0));
}

TEST(OwnMemory, SamplingStartedInsideAComponentGoesOnAfterIt) {
  // The heap profiler starts from libdump's own work: the countdown drawn
  // there must survive the component's end, or the thread never samples.
  {
    const OwnScope s(OwnComponent::kProfiler);
    SetSampleInterval(1);  // every allocation of the program sampled from here on
  }
  void* p = Allocate(64);
  EXPECT_TRUE(IsSampled(p));
  SetSampleInterval(0);
  Free(p);
}

}  // namespace
}  // namespace libdump::internal
