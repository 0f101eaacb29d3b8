// A span's local frees take the slow path only while some slot in it is
// annotated (typed or sampled): once the last annotation is freed, locally
// or by another thread, frees in that span are fast again.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "libdump/heap.h"
#include "libdump/typed.h"
#include "page_map.h"
#include "span.h"

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
bool SlowFrees(const Span* s) { return (s->free_flags & internal::kFreeSlowExtra) != 0; }
uint32_t Annotations(const Span* s) { return s->extra.load()->annotations.load(); }

// Plain objects of `size` until one shares `near`'s span.
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

TEST(SpanAnnotations, FreeingTheLastTypedObjectMakesFreesFastAgain) {
  Pair* t = make<Pair>();
  Span* s = SpanOf(t);
  std::vector<void*> plain = Neighbours(t, sizeof(Pair), 3);
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_TRUE(SlowFrees(s));
  EXPECT_EQ(Annotations(s), 1u);
  Free(plain[0]);  // still one typed slot: slow, and it stays so
  EXPECT_TRUE(SlowFrees(s));
  destroy(t);
  EXPECT_EQ(Annotations(s), 0u);
  EXPECT_FALSE(SlowFrees(s));
  Free(plain[1]);
  Free(plain[2]);
}

TEST(SpanAnnotations, ASampledObjectSlowsItsSpanOnlyWhileItLives) {
  SetSampleInterval(1);  // every allocation
  void* sampled = Allocate(48);
  SetSampleInterval(0);
  ASSERT_TRUE(IsSampled(sampled));
  Span* s = SpanOf(sampled);
  std::vector<void*> plain = Neighbours(sampled, 48, 2);
  ASSERT_EQ(plain.size(), 2u);
  ASSERT_FALSE(IsSampled(plain[0]));
  EXPECT_TRUE(SlowFrees(s));
  Free(sampled);
  EXPECT_FALSE(SlowFrees(s));
  EXPECT_EQ(Annotations(s), 0u);
  Free(plain[0]);
  Free(plain[1]);
}

TEST(SpanAnnotations, ARemoteFreeOfTheLastAnnotationLetsTheOwnerGoFast) {
  Pair* t = make<Pair>();
  Span* s = SpanOf(t);
  std::vector<void*> plain = Neighbours(t, sizeof(Pair), 2);
  ASSERT_EQ(plain.size(), 2u);
  std::thread([t] { destroy(t); }).join();
  EXPECT_EQ(Annotations(s), 0u);
  EXPECT_TRUE(SlowFrees(s));  // only the owner clears its flag...
  Free(plain[0]);
  EXPECT_FALSE(SlowFrees(s));  // ...at its next free in the span
  Free(plain[1]);
}

TEST(SpanAnnotations, TypedAndSampledOnOneSlotCountTwice) {
  SetSampleInterval(1);
  Pair* t = make<Pair>();
  SetSampleInterval(0);
  ASSERT_TRUE(IsSampled(t));
  Span* s = SpanOf(t);
  EXPECT_EQ(Annotations(s), 2u);
  destroy(t);
  EXPECT_EQ(Annotations(s), 0u);
}

}  // namespace
}  // namespace libdump
