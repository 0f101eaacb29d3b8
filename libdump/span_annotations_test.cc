// Only annotated slots (typed or sampled) send their frees to the slow path,
// which clears the annotation; the other frees in the same span stay on the
// fast path. An annotated slot takes its page's tag away, not its span's,
// and the page has it back once its last annotated slot is freed.
#include <gtest/gtest.h>

#include <atomic>
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
using internal::g_classes;
using internal::kPageShift;
using internal::PageMap;
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

uint32_t TagOf(const void* p) { return g_page_map.Tag(reinterpret_cast<uintptr_t>(p)); }
uint32_t PageInSpan(const void* p) {
  return static_cast<uint32_t>((reinterpret_cast<uintptr_t>(p) - SpanOf(p)->start) >> kPageShift);
}

TEST(SpanAnnotations, ASampledSlotTakesOnlyItsPagesTagUntilItIsFreed) {
  // A class of several pages a span: 2 KiB.
  constexpr size_t kSize = 2048;
  const int c = internal::SizeToClass(kSize);
  ASSERT_GE(g_classes[c].npages, 2u);
  SetSampleInterval(1);
  void* sampled = Allocate(kSize);
  SetSampleInterval(0);
  ASSERT_TRUE(IsSampled(sampled));
  EXPECT_EQ(TagOf(sampled), 0u);
  // A neighbour on another page of the span keeps its page's tag.
  std::vector<void*> plain = Neighbours(sampled, kSize, g_classes[c].nslots - 1);
  void* other = nullptr;
  for (void* p : plain) {
    if (PageInSpan(p) != PageInSpan(sampled)) other = p;
  }
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(TagOf(other), PageMap::TagOf(c, PageInSpan(other)));
  const uint32_t page = PageInSpan(sampled);
  Free(sampled);
  EXPECT_EQ(TagOf(sampled), PageMap::TagOf(c, page));
  for (void* p : plain) Free(p);
}

TEST(SpanAnnotations, ATypedPageHasItsTagBackWhenItsLastTypedSlotIsFreed) {
  Pair* t = make<Pair>();
  Pair* u = make<Pair>();
  ASSERT_EQ(SpanOf(t), SpanOf(u));
  ASSERT_EQ(PageInSpan(t), PageInSpan(u));
  const int c = SpanOf(t)->size_class;
  const uint32_t page = PageInSpan(t);
  EXPECT_EQ(TagOf(t), 0u);
  destroy(t);
  EXPECT_EQ(TagOf(u), 0u) << "u is still typed";
  destroy(u);
  EXPECT_EQ(TagOf(u), PageMap::TagOf(c, page));
}

// The race that RetagPage's fences close (allocator.cc): one thread keeps
// typing slots and freeing them (each last free of a page retags it), the
// other keeps typing slots of the same class; every typed slot handed out,
// by either, must lie on an untagged page, or its free would skip the
// clearing of its annotations. A break in the protocol shows here as a
// tagged page under a fresh typed object.
TEST(SpanAnnotations, NoTypedSlotIsHandedOutOnATaggedPage) {
  std::atomic<long> tagged{0};
  auto churn = [&tagged](int seed) {
    std::vector<Pair*> keep;
    uint64_t x = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(seed + 1);
    for (int i = 0; i < 200000; ++i) {
      Pair* p = make<Pair>();
      if (TagOf(p) != 0) tagged.fetch_add(1);
      keep.push_back(p);
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (keep.size() > 8 || (x & 1)) {
        const size_t k = x % keep.size();
        destroy(keep[k]);
        keep[k] = keep.back();
        keep.pop_back();
      }
    }
    for (Pair* p : keep) destroy(p);
  };
  std::thread other(churn, 1);
  churn(0);
  other.join();
  EXPECT_EQ(tagged.load(), 0);
}

}  // namespace
}  // namespace libdump
