#include "page_heap.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <new>

#include "arena.h"
#include "platform/env/env_var.h"
#include "page_map.h"

namespace libdump::internal {

constinit PageHeap g_page_heap;

namespace {

uint64_t MonotonicNs() {
  timespec ts;
  // The coarse clock is a vDSO read with no syscall; decay epochs are far
  // longer than its resolution.
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// Calls fn(word, mask) for the words of a bitmap covering bits [first, first + n).
template <class Fn>
void ForBits(uint64_t* bits, size_t first, size_t n, Fn fn) {
  while (n > 0) {
    const size_t b = first & 63;
    const size_t take = 64 - b < n ? 64 - b : n;
    const uint64_t mask = take == 64 ? ~uint64_t{0} : ((uint64_t{1} << take) - 1) << b;
    fn(bits[first >> 6], mask);
    first += take;
    n -= take;
  }
}

size_t CountBits(const uint64_t* bits, size_t first, size_t n) {
  size_t count = 0;
  ForBits(const_cast<uint64_t*>(bits), first, n,
          [&](uint64_t& w, uint64_t m) { count += static_cast<size_t>(__builtin_popcountll(w & m)); });
  return count;
}

void SetBits(uint64_t* bits, size_t first, size_t n, bool value) {
  ForBits(bits, first, n, [&](uint64_t& w, uint64_t m) { w = value ? (w | m) : (w & ~m); });
}

HugePages ModeFromEnvironment() {
  // The env parser allocates nothing, so it is safe on the first malloc.
  const char* v = env::Get("LIBDUMP_HUGEPAGES");
  if (v == nullptr || strcasecmp(v, "auto") == 0) return HugePages::kAuto;
  bool on;
  if (env::ParseBool(v, &on)) return on ? HugePages::kOn : HugePages::kOff;
  env::Warn("LIBDUMP_HUGEPAGES", v, "is not auto or a boolean (1/0, true/false, yes/no, on/off)", "auto");
  return HugePages::kAuto;
}

}  // namespace

Span* PageHeap::NewSpanObject() {
  Span* s = free_span_objects_;
  if (s != nullptr) {
    free_span_objects_ = s->next;
  } else {
    s = static_cast<Span*>(MetaAlloc(sizeof(Span)));
  }
  return new (s) Span();
}

void PageHeap::DeleteSpanObject(Span* s) {
  s->next = free_span_objects_;
  free_span_objects_ = s;
}

SpanExtra* PageHeap::NewExtra() {
  // A pooled table is clean already: its span went back to the page heap
  // empty, and every free cleared its slot's annotations (ClearAnnotations).
  // Zeroing it again cost 66 cache-line writes, one in ten heap samples.
  if (SpanExtra* e = free_extras_) {
    free_extras_ = e->next_free;
    e->next_free = nullptr;
    return e;
  }
  return new (MetaAlloc(sizeof(SpanExtra))) SpanExtra();
}

void PageHeap::DeleteExtra(SpanExtra* e) {
  e->next_free = free_extras_;
  free_extras_ = e;
}

void PageHeap::SetClock(uint64_t (*now_ns)()) {
  clock_ = now_ns;
  epoch_end_ = 0;
}

void PageHeap::SetHugePages(HugePages mode) {
  huge_mode_ = mode;
  huge_mode_set_ = true;
  SetMetaHugePages(mode != HugePages::kOff);
}

bool PageHeap::InHugeRegion(uintptr_t addr) const {
  for (uint32_t id = 1; id <= next_arena_id_; ++id) {
    const ArenaPages& ap = arena_pages_[id];
    if (addr >= ap.start && addr < ap.end) return addr >= ap.huge_start;
  }
  return false;
}

size_t PageHeap::CommittedPages(uintptr_t start, size_t npages) const {
  for (uint32_t id = 1; id <= next_arena_id_; ++id) {
    const ArenaPages& ap = arena_pages_[id];
    if (start >= ap.start && start < ap.end) {
      return CountBits(ap.committed, (start - ap.start) >> kPageShift, npages);
    }
  }
  return 0;
}

void PageHeap::Insert(Span* s) {
  ListFor(s).PushFront(s);
  free_committed_.fetch_add(uint64_t{s->dirty_pages} << kPageShift, std::memory_order_relaxed);
  returned_.fetch_add(uint64_t{s->npages - s->dirty_pages} << kPageShift, std::memory_order_relaxed);
}

void PageHeap::Unlink(Span* s) {
  ListFor(s).Remove(s);
  free_committed_.fetch_sub(uint64_t{s->dirty_pages} << kPageShift, std::memory_order_relaxed);
  returned_.fetch_sub(uint64_t{s->npages - s->dirty_pages} << kPageShift, std::memory_order_relaxed);
}

Span* PageHeap::Find(size_t npages) {
  // Committed pages first: reusing them costs no page faults and no RSS.
  // Short runs: exact-size lists.
  if (npages <= kExactLists) {
    for (SpanQueue* lists : {normal_, released_}) {
      for (size_t i = npages; i <= kExactLists; ++i) {
        if (!lists[i].empty()) return lists[i].front();
      }
    }
  }
  // Long runs: lowest address first. Packing the heap toward its start keeps
  // freed blocks in use and the far end untouched, where release finds it.
  for (SpanQueue* lists : {normal_, released_}) {
    Span* best = nullptr;
    for (Span* s = lists[0].front(); s != nullptr; s = s->next) {
      if (s->npages >= npages && (best == nullptr || s->start < best->start)) best = s;
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

// Takes npages off the front of free span s; the span returned is in use but
// its pages are not yet marked committed.
Span* PageHeap::Carve(Span* s, size_t npages) {
  Unlink(s);
  const ArenaPages& ap = arena_pages_[s->arena_id];
  size_t taken = 0;
  if (s->dirty_pages == s->npages) {
    taken = npages;
  } else if (s->dirty_pages != 0) {
    taken = CountBits(ap.committed, (s->start - ap.start) >> kPageShift, npages);
  }
  if (s->npages > npages) {
    Span* rest = NewSpanObject();
    rest->start = s->start + (npages << kPageShift);
    rest->npages = static_cast<uint32_t>(s->npages - npages);
    rest->dirty_pages = s->dirty_pages - static_cast<uint32_t>(taken);
    rest->arena_id = s->arena_id;
    g_page_map.Set(rest->start, 1, rest);
    g_page_map.Set(rest->end() - kPageSize, 1, rest);
    Insert(rest);
    s->npages = static_cast<uint32_t>(npages);
  }
  // Pages never touched or released since read as zero.
  s->zeroed = taken == 0;
  s->dirty_pages = 0;
  s->state = SpanState::kLarge;  // in use; the caller may make it small
  g_page_map.Set(s->start, s->npages, s);
  in_use_spans_.fetch_add(1, std::memory_order_relaxed);
  in_use_bytes_.fetch_add(uint64_t{s->npages} << kPageShift, std::memory_order_relaxed);
  return s;
}

// An in-use span's pages are committed from the moment they are handed out:
// the owner may touch any of them.
void PageHeap::MarkCommitted(const Span* s) {
  const ArenaPages& ap = arena_pages_[s->arena_id];
  SetBits(ap.committed, (s->start - ap.start) >> kPageShift, s->npages, true);
}

bool PageHeap::Grow(size_t npages) {
  if (next_arena_id_ == kMaxArenas) return false;
  if (!huge_mode_set_) SetHugePages(ModeFromEnvironment());
  const size_t need = npages << kPageShift;
  const size_t least = (need + kHugePageSize - 1) & ~(kHugePageSize - 1);
  size_t bytes = (need + kArenaSize - 1) / kArenaSize * kArenaSize;
  const uint64_t reserved_before = g_arenas.reserved_bytes();
  void* bitmap;
  size_t bitmap_bytes;
  Arena a;
  for (;;) {
    // The committed bitmap comes first so that failing to map it leaves no arena behind.
    bitmap_bytes = (bytes >> kPageShift) / 8;
    bitmap = mmap(nullptr, bitmap_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    a = bitmap == MAP_FAILED ? Arena{0, 0} : g_arenas.Grow(bytes);
    if (a.start != 0) break;
    if (bitmap != MAP_FAILED) munmap(bitmap, bitmap_bytes);
    // Near RLIMIT_AS or the commit limit a whole GiB may not fit where the
    // request still does. Only the request: what is left stays for others
    // (the out-of-memory dump maps its buffers after this).
    if (bytes == least) return false;
    bytes = least;
  }
  if (!g_page_map.Ensure(a.start, a.end)) {
    munmap(bitmap, bitmap_bytes);
    return false;
  }
  uintptr_t huge_start = a.end;
  if (huge_mode_ == HugePages::kOn) {
    huge_start = a.start;
  } else if (huge_mode_ == HugePages::kAuto) {
    // Only the first arena (or the first few, near a memory limit) has part
    // of the small-page prefix.
    huge_start = std::min(a.end, a.start + (reserved_before < kSmallPagePrefix ? kSmallPagePrefix - reserved_before : 0));
  }
  // Advised before the first touch: each first fault in a 2 MiB region then
  // maps a huge page directly instead of 512 small ones for khugepaged to
  // collapse later. Fork copies one entry per huge page instead of 512.
  if (huge_start < a.end) madvise(reinterpret_cast<void*>(huge_start), a.end - huge_start, MADV_HUGEPAGE);
  Span* s = NewSpanObject();
  s->start = a.start;
  s->npages = static_cast<uint32_t>(bytes >> kPageShift);
  s->dirty_pages = 0;  // never touched: no RSS, reads as zero
  s->arena_id = ++next_arena_id_;
  arena_pages_[s->arena_id] = ArenaPages{a.start, a.end, huge_start, static_cast<uint64_t*>(bitmap)};
  g_page_map.Set(s->start, 1, s);
  g_page_map.Set(s->end() - kPageSize, 1, s);
  Insert(s);
  return true;
}

Span* PageHeap::Alloc(size_t npages) {
  if (npages == 0 || npages > (uint64_t{1} << 31)) return nullptr;
  Span* s = Find(npages);
  if (s == nullptr) {
    if (!Grow(npages)) return nullptr;
    s = Find(npages);
  }
  s = Carve(s, npages);
  MarkCommitted(s);
  Tick();
  return s;
}

Span* PageHeap::AllocAligned(size_t npages, size_t align_pages) {
  if (align_pages <= 1) return Alloc(npages);
  const size_t want = npages + align_pages - 1;
  if (npages == 0 || want > (uint64_t{1} << 31)) return nullptr;
  Span* s = Find(want);
  if (s == nullptr) {
    if (!Grow(want)) return nullptr;
    s = Find(want);
  }
  s = Carve(s, want);
  const uintptr_t align = align_pages << kPageShift;
  const uintptr_t aligned = (s->start + align - 1) & ~(align - 1);
  // Give back the pages before and after the aligned run as spans of their
  // own; their committed bits were never set, so they stay as they were.
  auto split_off = [&](uintptr_t start, size_t pages) {
    if (pages == 0) return;
    Span* part = NewSpanObject();
    part->start = start;
    part->npages = static_cast<uint32_t>(pages);
    part->arena_id = s->arena_id;
    g_page_map.Set(start, pages, part);
    in_use_spans_.fetch_add(1, std::memory_order_relaxed);  // MakeFree takes it and the bytes off
    MakeFree(part);
  };
  const size_t head = (aligned - s->start) >> kPageShift;
  const size_t tail = s->npages - head - npages;
  const uintptr_t old_start = s->start;
  s->start = aligned;
  s->npages = static_cast<uint32_t>(npages);
  split_off(old_start, head);
  split_off(s->end(), tail);
  s->zeroed = CommittedPages(s->start, npages) == 0;
  MarkCommitted(s);
  Tick();
  return s;
}

// s is in no list; returns the merged span, inserted into its list. Spans
// merge only within their arena, whatever their committed state, so that
// freed neighbours can serve one large request; committed counts add up.
Span* PageHeap::MergeNeighbours(Span* s) {
  const ArenaPages& ap = arena_pages_[s->arena_id];
  if (Span* left = s->start > ap.start ? g_page_map.Get(s->start - kPageSize) : nullptr;
      left != nullptr && left->state == SpanState::kFree && left->end() == s->start) {
    Unlink(left);
    // The old boundary pages become inner pages (unless one is left's first).
    if (left->npages > 1) g_page_map.Set(left->end() - kPageSize, 1, nullptr);
    g_page_map.Set(s->start, 1, nullptr);
    left->npages += s->npages;
    left->dirty_pages += s->dirty_pages;
    g_page_map.Set(left->end() - kPageSize, 1, left);
    DeleteSpanObject(s);
    s = left;
  }
  if (Span* right = s->end() < ap.end ? g_page_map.Get(s->end()) : nullptr;
      right != nullptr && right->state == SpanState::kFree && right->start == s->end()) {
    Unlink(right);
    if (s->npages > 1) g_page_map.Set(s->end() - kPageSize, 1, nullptr);
    g_page_map.Set(right->start, 1, nullptr);
    s->npages += right->npages;
    s->dirty_pages += right->dirty_pages;
    g_page_map.Set(s->end() - kPageSize, 1, s);
    DeleteSpanObject(right);
  }
  Insert(s);
  return s;
}

// An in-use span becomes free: its committed count is read from the bitmap.
void PageHeap::MakeFree(Span* s) {
  in_use_spans_.fetch_sub(1, std::memory_order_relaxed);
  in_use_bytes_.fetch_sub(uint64_t{s->npages} << kPageShift, std::memory_order_relaxed);
  s->state = SpanState::kFree;
  s->size_class = 0;
  s->list = SpanList::kNone;
  const ArenaPages& ap = arena_pages_[s->arena_id];
  s->dirty_pages = static_cast<uint32_t>(CountBits(ap.committed, (s->start - ap.start) >> kPageShift, s->npages));
  if (s->npages > 2) g_page_map.Set(s->start + kPageSize, s->npages - 2, nullptr);
  MergeNeighbours(s);
}

// Releases the committed pages of [start, end), part of one free span.
uint64_t PageHeap::ReleaseRange(uint32_t arena_id, uintptr_t start, uintptr_t end) {
  const ArenaPages& ap = arena_pages_[arena_id];
  const size_t first = (start - ap.start) >> kPageShift;
  const size_t n = (end - start) >> kPageShift;
  const size_t committed = CountBits(ap.committed, first, n);
  if (committed == 0) return 0;
  madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
  SetBits(ap.committed, first, n, false);
  // Returned first, then no longer free and committed (release): a reader of
  // both that sees the second sees the first, so the two never add up to
  // less than the free bytes, even with a long release in progress.
  returned_.fetch_add(committed << kPageShift, std::memory_order_relaxed);
  free_committed_.fetch_sub(committed << kPageShift, std::memory_order_release);
  return committed;
}

// Releases committed pages of free span s from its end backwards, 2 MiB
// region by region, until `want` pages went. A region in the huge-page part
// goes only whole, and only if s covers all of it: releasing part of a huge
// page would split it.
uint64_t PageHeap::ReleaseFrom(Span* s, uint64_t want) {
  // Off its list without Unlink: the span's bytes stay in the statistics,
  // and ReleaseRange moves them from committed to returned as it goes.
  ListFor(s).Remove(s);
  const ArenaPages& ap = arena_pages_[s->arena_id];
  uint64_t released = 0;
  for (uintptr_t hi = s->end(); hi > s->start && released < want && released < s->dirty_pages;) {
    const uintptr_t region = (hi - 1) & ~(uintptr_t{kHugePageSize} - 1);
    const uintptr_t lo = region > s->start ? region : s->start;
    if (region < ap.huge_start) {
      released += ReleaseRange(s->arena_id, lo, hi);
    } else if (lo == region && hi == region + kHugePageSize) {
      released += ReleaseRange(s->arena_id, lo, hi);
    }
    hi = lo;
  }
  s->dirty_pages -= static_cast<uint32_t>(released);
  ListFor(s).PushFront(s);
  return released;
}

uint64_t PageHeap::ReleaseDownTo(uint64_t keep) {
  const uint64_t before = free_committed_bytes();
  auto over = [&] { return free_committed_bytes() > keep; };
  auto want = [&] { return (free_committed_bytes() - keep + kPageSize - 1) >> kPageShift; };
  // Long runs, highest address first: first fit reaches them last.
  uintptr_t below = UINTPTR_MAX;
  while (over()) {
    Span* victim = nullptr;
    for (Span* r = normal_[0].front(); r != nullptr; r = r->next) {
      if (r->start < below && (victim == nullptr || r->start > victim->start)) victim = r;
    }
    if (victim == nullptr) break;
    below = victim->start;
    ReleaseFrom(victim, want());
  }
  // Then short runs, longest first. A span that keeps committed pages goes
  // back to the front of its list, behind the cursor.
  for (size_t i = kExactLists; i > 0 && over(); --i) {
    for (Span* r = normal_[i].front(); r != nullptr && over();) {
      Span* next = r->next;
      ReleaseFrom(r, want());
      r = next;
    }
  }
  return before - free_committed_bytes();
}

void PageHeap::Tick() {
  const uint64_t committed = free_committed_bytes();
  if (committed < idle_min_) idle_min_ = committed;
  const uint64_t in_use = in_use_bytes();
  if (in_use > epoch_peak_) epoch_peak_ = in_use;
  const uint64_t now = clock_ != nullptr ? clock_() : MonotonicNs();
  if (now < epoch_end_) return;
  // The epoch's peak joins the window, unless the window has passed it too;
  // epochs that passed without a tick peaked at what is in use now.
  const uint64_t passed = epoch_end_ == 0 ? 1 : 1 + (now - epoch_end_) / kDecayEpochNs;
  for (uint64_t e = 0; e < passed && e < kPeakEpochs; ++e) {
    epoch_peaks_[peak_slot_] = e == 0 && passed <= kPeakEpochs ? epoch_peak_ : in_use;
    peak_slot_ = (peak_slot_ + 1) % kPeakEpochs;
  }
  window_peak_ = 0;
  for (uint64_t p : epoch_peaks_) window_peak_ = p > window_peak_ ? p : window_peak_;
  epoch_peak_ = in_use;
  if (epoch_end_ != 0) {
    // What stayed free and committed through the whole epoch was not needed:
    // half of it goes per epoch elapsed.
    const uint64_t epochs = 1 + (now - epoch_end_) / kDecayEpochNs;
    const uint64_t release = idle_min_ - (epochs >= 64 ? 0 : idle_min_ >> epochs);
    const uint64_t target = committed - release > kDecayFloorBytes ? committed - release : kDecayFloorBytes;
    if (committed > target) ReleaseDownTo(target);
  }
  epoch_end_ = now + kDecayEpochNs;
  idle_min_ = free_committed_bytes();
}

void PageHeap::Free(Span* s) {
  MakeFree(s);
  // The hard cap: retried only after the free committed bytes grew by
  // another 16 MiB when what is left cannot go (huge pages partly in use),
  // so that frees do not scan the free lists in vain.
  const uint64_t limit = hard_limit();
  const uint64_t committed = free_committed_bytes();
  if (committed <= limit) {
    stuck_at_ = 0;
  } else if (committed > stuck_at_) {
    ReleaseDownTo(limit - limit / 4);
    stuck_at_ = free_committed_bytes() > limit ? free_committed_bytes() + (uint64_t{16} << 20) : 0;
  }
  Tick();
}

}  // namespace libdump::internal

namespace libdump {

void SetHugePages(HugePages mode) {
  internal::AllocatorSection section;
  internal::LockGuard g(internal::g_page_heap.mutex());
  internal::g_page_heap.SetHugePages(mode);
}

}  // namespace libdump
