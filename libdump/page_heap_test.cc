#include "page_heap.h"

#include <algorithm>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

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

// Runs f with the page heap locked, inside an allocator section; assertions
// stay outside. Not a template: GCC 12 with UBSan miscompiles the section's
// TLS null check when it is inlined into some callers.
[[gnu::noinline]] void Locked(const std::function<void()>& f) {
  AllocatorSection section;
  LockGuard g(g_page_heap.mutex());
  f();
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

uint64_t g_frozen_now = 0;
uint64_t FrozenNow() { return g_frozen_now; }

// A big buffer freed is kept while its peak is in the window: a program that
// makes it again does not fault it back in. Once the window has passed, the
// cap is back to the larger of kMinHardLimitBytes and what is in use.
TEST(PageHeap, TheHardLimitFollowsThePeakInUseOfTheLastEpochs) {
  g_frozen_now = 5'000'000'000;
  Locked([] {
    g_page_heap.SetClock(&FrozenNow);
    g_page_heap.Tick();
  });
  const size_t npages = (PageHeap::kMinHardLimitBytes >> kPageShift) + 64;
  Span* s = Alloc(npages);
  ASSERT_NE(s, nullptr);
  memset(reinterpret_cast<void*>(s->start), 0xab, npages * kPageSize);
  const uint64_t returned_before = g_page_heap.returned_bytes();
  Free(s);
  EXPECT_EQ(g_page_heap.returned_bytes(), returned_before);
  EXPECT_GE(g_page_heap.free_committed_bytes(), npages * kPageSize);
  EXPECT_GE(g_page_heap.hard_limit(), npages * kPageSize);

  g_frozen_now += (PageHeap::kPeakEpochs + 1) * PageHeap::kDecayEpochNs;
  Locked([] { g_page_heap.Tick(); });
  EXPECT_EQ(g_page_heap.hard_limit(), std::max(PageHeap::kMinHardLimitBytes, g_page_heap.in_use_bytes()));
  // The next free finds the pages over the cap and releases them at once.
  Free(Alloc(1));
  EXPECT_GT(g_page_heap.returned_bytes(), returned_before);
  EXPECT_LE(g_page_heap.free_committed_bytes(), g_page_heap.hard_limit());
  Locked([] { g_page_heap.SetClock(nullptr); });
}

TEST(PageHeap, ReleasedPagesReadAsZeroAndSpansCarvedFromThemSaySo) {
  const size_t npages = 300;
  Span* s = Alloc(npages);
  ASSERT_NE(s, nullptr);
  memset(reinterpret_cast<void*>(s->start), 0xab, npages * kPageSize);
  const uintptr_t start = s->start;
  Free(s);
  Locked([] { g_page_heap.ReleaseDownTo(0); });
  // Released (small-page area) or kept whole with a huge page (huge area).
  const bool released = g_page_heap.CommittedPages(start, npages) == 0;
  if (released) {
    EXPECT_EQ(reinterpret_cast<volatile unsigned char*>(start)[12345], 0);
  }
  Span* again = Alloc(npages);
  ASSERT_NE(again, nullptr);
  // zeroed is exact: true iff none of its pages was committed.
  if (again->start == start) {
    EXPECT_EQ(again->zeroed, released);
  }
  for (size_t i = 0; again->zeroed && i < npages * kPageSize; i += 4096) {
    ASSERT_EQ(reinterpret_cast<volatile unsigned char*>(again->start)[i], 0) << i;
  }
  Free(again);
}

// Every free span's committed count equals its committed bits, and the sum
// is what the statistics say.
void ExpectCommittedCountsExact() {
  struct Seen {
    uintptr_t start;
    bool free;
    size_t counted;  // dirty_pages, or npages for an in-use span
    size_t bits;
  };
  std::vector<Seen> seen;
  seen.reserve(1 << 16);
  uint64_t sum = 0, stats = 0;
  Locked([&] {
    for (size_t a = 0; a < g_arenas.count(); ++a) {
      for (uintptr_t p = g_arenas.at(a).start; p < g_arenas.at(a).end;) {
        Span* s = g_page_map.Get(p);
        if (s == nullptr || s->start != p) {
          p += kPageSize;
          continue;
        }
        const bool free = s->state == SpanState::kFree;
        seen.push_back({s->start, free, free ? s->dirty_pages : s->npages,
                        g_page_heap.CommittedPages(s->start, s->npages)});
        if (free) sum += uint64_t{s->dirty_pages} << kPageShift;
        p = s->end();
      }
    }
    stats = g_page_heap.free_committed_bytes();
  });
  for (const Seen& x : seen) EXPECT_EQ(x.counted, x.bits) << std::hex << x.start << (x.free ? " free" : " in use");
  EXPECT_EQ(sum, stats);
}

TEST(PageHeap, CommittedCountsStayExactThroughSplitsMergesAndReleases) {
  std::mt19937 rng(7);
  std::vector<Span*> live;
  for (int i = 0; i < 400; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      // 1..600 pages: exact lists and long runs, aligned now and then.
      const size_t n = 1 + rng() % 600;
      Span* s = Alloc(n, rng() % 5 == 0 ? size_t{1} << (rng() % 9) : 1);
      ASSERT_NE(s, nullptr);
      live.push_back(s);
    } else {
      const size_t k = rng() % live.size();
      Free(live[k]);
      live[k] = live.back();
      live.pop_back();
    }
    if (i % 50 == 0) Locked([] { g_page_heap.ReleaseDownTo(g_page_heap.free_committed_bytes() / 2); });
  }
  ExpectCommittedCountsExact();
  for (Span* s : live) Free(s);
  ExpectCommittedCountsExact();
}

uint64_t g_fake_now = 0;
uint64_t FakeNow() { return g_fake_now; }

TEST(PageHeap, DecayReleasesHalfOfWhatStayedIdleForAnEpoch) {
  auto committed = [] { return g_page_heap.free_committed_bytes(); };
  auto tick_at = [](uint64_t now) {
    g_fake_now = now;
    Locked([] { g_page_heap.Tick(); });
  };
  g_fake_now = 1'000'000'000;
  uint64_t residue = 0;  // huge pages partly in use
  Locked([&] {
    g_page_heap.SetClock(&FakeNow);
    g_page_heap.ReleaseDownTo(0);
    residue = g_page_heap.free_committed_bytes();
  });
  Span* s = Alloc(4096);  // 32 MiB, under the hard limit
  ASSERT_NE(s, nullptr);
  Free(s);
  // Ends the epoch of the allocation, when at most `residue` was idle.
  tick_at(g_fake_now + PageHeap::kDecayEpochNs);
  const uint64_t idle = committed();
  ASSERT_GE(idle, uint64_t{16} << 20);

  // Within the next epoch nothing goes.
  tick_at(g_fake_now + PageHeap::kDecayEpochNs / 2);
  EXPECT_EQ(committed(), idle);

  // Once it is over, half of what stayed idle goes, to within one 2 MiB
  // region (the unit of release).
  tick_at(g_fake_now + PageHeap::kDecayEpochNs / 2);
  const uint64_t target = idle - idle / 2;
  EXPECT_LE(committed(), target);
  EXPECT_GT(committed() + kHugePageSize, target);

  // After a long quiet time (64 epochs) all of it goes but the floor and
  // what cannot: the residue, and the huge pages at the freed run's two ends
  // if neighbours use part of them.
  tick_at(g_fake_now + 64 * PageHeap::kDecayEpochNs);
  EXPECT_LE(committed(),
            (PageHeap::kDecayFloorBytes > residue ? PageHeap::kDecayFloorBytes : residue) + 2 * kHugePageSize);
  Locked([] { g_page_heap.SetClock(nullptr); });
}

}  // namespace
}  // namespace libdump::internal
