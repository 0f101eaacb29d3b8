// Only annotated slots (typed or sampled) send their frees to the slow path,
// which clears the annotation; the other frees in the same span stay on the
// fast path. Before, one sampled object slowed every free in its span.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "libdump/heap.h"
#include "libdump/typed.h"
#include "page_map.h"
#include "span.h"
#include "thread_cache.h"

namespace annotations_test {
struct Pair {
  Pair* a;
  Pair* b;
  long pad[4];  // 48 bytes: the same class as Allocate(48)
};
}  // namespace annotations_test
LIBDUMP_TYPE(annotations_test::Pair, a, b)

namespace libdump {
namespace {

using annotations_test::Pair;
using internal::g_page_map;
using internal::Span;

Span* SpanOf(const void* p) { return g_page_map.Get(reinterpret_cast<uintptr_t>(p)); }

bool Annotated(const void* p) {
  const Span* s = SpanOf(p);
  const uint32_t i = s->SlotIndex(reinterpret_cast<uintptr_t>(p));
  return (s->bits[i >> 6].annotated.load() >> (i & 63)) & 1;
}

uint32_t TypeIdOf(const void* p) {
  ObjectInfo o;
  return FindObject(p, &o) ? o.type_id : ~0u;
}

// What the page heap's pool relies on to hand side tables out unzeroed.
bool ExtraIsClean(const internal::SpanExtra* e) {
  for (uint32_t w = 0; w < internal::kBitmapWords; ++w) {
    if (e->typed[w].load() != 0) return false;
  }
  for (uint32_t i = 0; i < internal::kMaxSlotsPerSpan; ++i) {
    if (e->type_id[i].load() != 0 || e->count[i].load() != 0) return false;
  }
  return true;
}

size_t AnnotatedSlots(const Span* s) {
  size_t n = 0;
  for (const auto& w : s->bits) n += static_cast<size_t>(__builtin_popcountll(w.annotated.load()));
  return n;
}

// Plain objects of `size` until `want` of them share `near`'s span.
std::vector<void*> Neighbours(const void* near, size_t size, size_t want) {
  std::vector<void*> all, same;
  while (same.size() < want && all.size() < 100000) {
    void* p = Allocate(size);
    all.push_back(p);
    if (SpanOf(p) == SpanOf(near)) same.push_back(p);
  }
  for (void* p : all) {
    bool keep = false;
    for (void* q : same) keep |= p == q;
    if (!keep) Free(p);
  }
  return same;
}

TEST(SpanAnnotations, OnlyTheTypedSlotIsAnnotatedAndFreeingItClearsIt) {
  Pair* t = make<Pair>();
  Span* s = SpanOf(t);
  std::vector<void*> plain = Neighbours(t, sizeof(Pair), 3);
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_TRUE(Annotated(t));
  for (void* p : plain) EXPECT_FALSE(Annotated(p));
  EXPECT_EQ(AnnotatedSlots(s), 1u);
  Free(plain[0]);
  EXPECT_NE(TypeIdOf(t), 0u);
  destroy(t);
  EXPECT_EQ(AnnotatedSlots(s), 0u);
  // The slot, reused plain, carries no stale type.
  void* again = Neighbours(plain[1], sizeof(Pair), 1).front();
  EXPECT_EQ(TypeIdOf(again), 0u);
  Free(again);
  Free(plain[1]);
  Free(plain[2]);
}

TEST(SpanAnnotations, ASampledSlotIsAnnotatedUntilFreed) {
  SetSampleInterval(1);  // every allocation
  void* sampled = Allocate(48);
  SetSampleInterval(0);
  ASSERT_TRUE(IsSampled(sampled));
  std::vector<void*> plain = Neighbours(sampled, 48, 2);
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_TRUE(Annotated(sampled));
  EXPECT_FALSE(Annotated(plain[0]));
  Span* s = SpanOf(sampled);
  Free(sampled);
  EXPECT_EQ(AnnotatedSlots(s), 0u);
  Free(plain[0]);
  Free(plain[1]);
}

// Another thread's free of an annotated slot clears its annotations at the
// free, as the allocating thread's would: no span belongs to a thread.
TEST(SpanAnnotations, AnotherThreadsFreeClearsTheAnnotations) {
  SetSampleInterval(1);
  Pair* t = make<Pair>();
  SetSampleInterval(0);
  Span* s = SpanOf(t);
  const internal::SpanExtra* e = s->extra.load();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(AnnotatedSlots(s), 1u);
  std::thread([t] { destroy(t); }).join();
  ObjectInfo o;
  EXPECT_FALSE(FindObject(t, &o));
  EXPECT_EQ(AnnotatedSlots(s), 0u);
  EXPECT_FALSE(IsSampled(t));
  EXPECT_TRUE(ExtraIsClean(e));
}

TEST(SpanAnnotations, TypedAndSampledOnOneSlotAreBothCleared) {
  SetSampleInterval(1);
  Pair* t = make<Pair>();
  SetSampleInterval(0);
  ASSERT_TRUE(IsSampled(t));
  Span* s = SpanOf(t);
  EXPECT_TRUE(Annotated(t));
  const internal::SpanExtra* e = s->extra.load();
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(ExtraIsClean(e));
  destroy(t);
  EXPECT_EQ(AnnotatedSlots(s), 0u);
  EXPECT_FALSE(IsSampled(t));
  EXPECT_TRUE(ExtraIsClean(e));
}

TEST(SpanAnnotations, ASpanEmptiedOfTypedArraysAndSamplesLeavesItsSideTableClean) {
  // Arrays of every slot of a span, some sampled, then all freed (some from
  // another thread): the side table that goes back to the pool is all zero.
  std::vector<Pair*> arrays;
  SetSampleInterval(1);
  for (int i = 0; i < 200; ++i) arrays.push_back(i % 3 == 0 ? make_array<Pair>(1) : make<Pair>());
  SetSampleInterval(0);
  Span* s = SpanOf(arrays[0]);
  const internal::SpanExtra* e = s->extra.load();
  ASSERT_NE(e, nullptr);
  std::vector<Pair*> remote(arrays.begin(), arrays.begin() + 100);
  std::thread([&remote] { for (Pair* p : remote) destroy(p); }).join();
  for (size_t i = 100; i < arrays.size(); ++i) destroy(arrays[i]);
  EXPECT_TRUE(ExtraIsClean(e));
}

}  // namespace
}  // namespace libdump
