#include "page_heap.h"

#include <gtest/gtest.h>

#include <cstring>

#include "arena.h"
#include "page_map.h"

namespace libdump::internal {
namespace {

Span* Alloc(size_t npages, size_t align_pages = 1) {
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  Span* s = g_page_heap.AllocAligned(npages, align_pages);
  if (s != nullptr) s->state = SpanState::kLarge;
  return s;
}

void Free(Span* s) {
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  g_page_heap.Free(s);
}

TEST(PageHeap, SpansComeFromArenasAndMapEveryPage) {
  Span* s = Alloc(5);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->npages, 5u);
  EXPECT_EQ(s->start % kPageSize, 0u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(g_page_map.Get(s->start + i * kPageSize + 17), s);
  bool inside = false;
  for (size_t a = 0; a < g_arenas.count(); ++a) {
    inside |= s->start >= g_arenas.at(a).start && s->end() <= g_arenas.at(a).end;
  }
  EXPECT_TRUE(inside);
  EXPECT_LE(g_arenas.lowest(), s->start);
  EXPECT_GE(g_arenas.highest(), s->end());
  Free(s);
}

TEST(PageHeap, FreedNeighboursMergeBackIntoOneSpan) {
  // Longer than any span earlier tests leave free: carved in address order
  // from untouched arena pages.
  Span* a = Alloc(37);
  Span* b = Alloc(37);
  Span* c = Alloc(37);
  ASSERT_EQ(a->end(), b->start);
  ASSERT_EQ(b->end(), c->start);
  const uintptr_t start = a->start;
  const uintptr_t end = c->end();
  Free(a);
  Free(c);
  Free(b);
  // One free span now covers all three (and maybe free neighbours): its
  // first page, found by stepping back from a's, maps to it; inner pages map
  // to nothing, so no stale entry survives.
  Span* merged = nullptr;
  for (uintptr_t p = start; merged == nullptr && p + (uintptr_t{1} << 30) > start; p -= kPageSize) {
    Span* x = g_page_map.Get(p);
    if (x != nullptr && x->start == p) merged = x;
  }
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->state, SpanState::kFree);
  EXPECT_GE(merged->end(), end);
  EXPECT_EQ(g_page_map.Get(start + 40 * kPageSize), nullptr);
}

TEST(PageHeap, AlignedSpansAreAlignedAndGiveBackTheirSlack) {
  for (size_t align : {2, 8, 64, 256}) {
    const uint64_t before = g_page_heap.in_use_bytes();
    Span* s = Alloc(3, align);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->start % (align * kPageSize), 0u) << align;
    EXPECT_EQ(s->npages, 3u);
    EXPECT_EQ(g_page_heap.in_use_bytes() - before, 3 * kPageSize);
    Free(s);
  }
}

TEST(PageHeap, EmptyPagesBeyondTheBudgetGoBackToTheOs) {
  const size_t npages = (PageHeap::kMinRetainBytes >> kPageShift) + 64;
  Span* s = Alloc(npages);
  ASSERT_NE(s, nullptr);
  memset(reinterpret_cast<void*>(s->start), 0xab, npages * kPageSize);
  const uintptr_t start = s->start;
  const uint64_t returned_before = g_page_heap.returned_bytes();
  Free(s);
  EXPECT_LE(g_page_heap.free_committed_bytes(), PageHeap::kMinRetainBytes);
  EXPECT_GE(g_page_heap.returned_bytes(), returned_before + npages * kPageSize);
  // madvise(DONTNEED) pages read back as zero, and spans carved from them say so.
  EXPECT_EQ(reinterpret_cast<volatile unsigned char*>(start)[12345], 0);
  Span* again = Alloc(npages);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->zeroed);
  Free(again);
}

}  // namespace
}  // namespace libdump::internal
