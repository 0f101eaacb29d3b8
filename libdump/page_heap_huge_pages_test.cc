// The page heap's huge-page policy, checked against the kernel's own
// accounting in /proc/self/smaps. Each test uses a PageHeap of its own, so
// the spans land at known places in a fresh arena.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "arena.h"
#include "page_heap.h"

namespace libdump::internal {
namespace {

constexpr size_t kRegionPages = PageHeap::kPagesPerHugePage;

struct Mapping {
  long anon_huge_kb = -1;
  bool advised = false;  // VmFlags has "hg": MADV_HUGEPAGE applies
};

// The smaps entry of the mapping that holds addr.
Mapping MappingOf(uintptr_t addr) {
  Mapping m;
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == nullptr) return m;
  char line[1024];
  bool in = false;
  while (fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
      in = addr >= lo && addr < hi;
    } else if (in && strncmp(line, "AnonHugePages:", 14) == 0) {
      m.anon_huge_kb = atol(line + 14);
    } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
      m.advised = strstr(line, " hg") != nullptr;
    }
  }
  fclose(f);
  return m;
}

bool ThpMadviseMode() {
  FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == nullptr) return false;
  char buf[128] = {};
  const bool ok = fgets(buf, sizeof buf, f) != nullptr && strstr(buf, "[madvise]") != nullptr;
  fclose(f);
  return ok;
}

// Runs f with heap locked, inside an allocator section; assertions stay
// outside. Not a template: GCC 12 with UBSan miscompiles the section's TLS
// null check when it is inlined into some callers.
[[gnu::noinline]] void Locked(PageHeap& heap, const std::function<void()>& f) {
  AllocatorSection section;
  LockGuard g(heap.mutex());
  f();
}

// Whether addr is in a huge-page part of heap's arenas.
bool InHuge(PageHeap& heap, uintptr_t addr) {
  bool huge = false;
  Locked(heap, [&] { huge = heap.InHugeRegion(addr); });
  return huge;
}

size_t Committed(PageHeap& heap, uintptr_t start, size_t npages) {
  size_t n = 0;
  Locked(heap, [&] { n = heap.CommittedPages(start, npages); });
  return n;
}

void Touch(const Span* s) { memset(reinterpret_cast<void*>(s->start), 1, size_t{s->npages} << kPageShift); }

TEST(PageHeapHugePages, AutoModeKeepsTheHeapsFirstMebibytesInSmallPages) {
  // The first test of its process: this heap maps the process's first arena.
  ASSERT_EQ(g_arenas.reserved_bytes(), 0u);
  static PageHeap heap;
  Span* s = nullptr;
  Locked(heap, [&] {
    heap.SetHugePages(HugePages::kAuto);
    s = heap.Alloc((PageHeap::kSmallPagePrefix >> kPageShift) + kRegionPages);
  });
  ASSERT_NE(s, nullptr);
  const uintptr_t prefix_end = s->start + PageHeap::kSmallPagePrefix;
  EXPECT_FALSE(InHuge(heap, prefix_end - kPageSize));
  EXPECT_TRUE(InHuge(heap, prefix_end));
  EXPECT_FALSE(MappingOf(prefix_end - kPageSize).advised);
  EXPECT_EQ(MappingOf(prefix_end).advised, ThpMadviseMode());
  Locked(heap, [&] { heap.Free(s); });
}

TEST(PageHeapHugePages, WholeFreeRegionsGoBackAndPartlyUsedOnesStayWhole) {
  if (!ThpMadviseMode()) GTEST_SKIP() << "transparent huge pages are not in madvise mode";
  static PageHeap heap;
  // 8 MiB from the start of a fresh arena: a takes half of region 0, b the rest.
  Span *a, *b;
  Locked(heap, [&] {
    heap.SetHugePages(HugePages::kOn);
    a = heap.Alloc(kRegionPages / 2);
    b = heap.Alloc(kRegionPages * 7 / 2);
  });
  ASSERT_TRUE(a != nullptr && b != nullptr);
  ASSERT_EQ(a->start % kHugePageSize, 0u);
  ASSERT_EQ(b->start, a->end());
  EXPECT_TRUE(InHuge(heap, a->start));
  // The mapping may have merged with other arenas: huge pages are counted
  // as differences.
  const Mapping base = MappingOf(a->start);
  EXPECT_TRUE(base.advised);
  Touch(a);
  Touch(b);
  const long touched = MappingOf(a->start).anon_huge_kb - base.anon_huge_kb;
  // Advice before the first touch: faults map huge pages directly (the
  // kernel may still fall back to small pages when it has none to give).
  EXPECT_GT(touched, 0);

  Locked(heap, [&] { heap.Free(b); });
  EXPECT_EQ(heap.free_committed_bytes(), uint64_t{kRegionPages * 7 / 2} << kPageShift);
  Locked(heap, [&] { heap.ReleaseDownTo(0); });
  // Regions 1-3 went back whole; region 0 is partly used by a, so none of it went.
  EXPECT_EQ(heap.free_committed_bytes(), uint64_t{kRegionPages / 2} << kPageShift);
  EXPECT_EQ(Committed(heap, a->start, kRegionPages), kRegionPages);
  EXPECT_EQ(Committed(heap, a->start + kHugePageSize, 3 * kRegionPages), 0u);
  const long after = MappingOf(a->start).anon_huge_kb - base.anon_huge_kb;
  if (touched == 4 * 2048) {
    EXPECT_EQ(after, 2048) << "region 0's huge page was split or released";
  } else {
    EXPECT_LE(after, 2048);
  }

  Locked(heap, [&] {
    heap.Free(a);
    heap.ReleaseDownTo(0);
  });
  EXPECT_EQ(heap.free_committed_bytes(), 0u);
  EXPECT_EQ(MappingOf(a->start).anon_huge_kb - base.anon_huge_kb, 0);
}

TEST(PageHeapHugePages, SmallPageModeReleasesAnyRunAndAdvisesNothing) {
  static PageHeap heap;
  Span *a, *b;
  Locked(heap, [&] {
    heap.SetHugePages(HugePages::kOff);
    a = heap.Alloc(kRegionPages / 2);
    b = heap.Alloc(kRegionPages * 7 / 2);
  });
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_FALSE(InHuge(heap, a->start));
  EXPECT_FALSE(MappingOf(a->start).advised);
  Touch(a);
  Touch(b);
  Locked(heap, [&] {
    heap.Free(b);
    heap.ReleaseDownTo(0);
  });
  // Any free run goes, even the rest of a 2 MiB region a uses.
  EXPECT_EQ(heap.free_committed_bytes(), 0u);
  EXPECT_EQ(Committed(heap, a->start, kRegionPages), kRegionPages / 2);
  Locked(heap, [&] { heap.Free(a); });
}

}  // namespace
}  // namespace libdump::internal
