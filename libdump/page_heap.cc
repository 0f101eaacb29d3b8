#include "page_heap.h"

#include <sys/mman.h>

#include <new>

#include "arena.h"
#include "page_map.h"

namespace libdump::internal {

constinit PageHeap g_page_heap;

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
  SpanExtra* e = free_extras_;
  if (e != nullptr) {
    free_extras_ = e->next_free;
  } else {
    e = static_cast<SpanExtra*>(MetaAlloc(sizeof(SpanExtra)));
  }
  return new (e) SpanExtra();
}

void PageHeap::DeleteExtra(SpanExtra* e) {
  e->next_free = free_extras_;
  free_extras_ = e;
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
  // Short runs: exact-size lists, committed pages first (reusing them costs
  // no page faults and no RSS).
  if (npages <= kExactLists) {
    for (SpanQueue* lists : {normal_, released_}) {
      for (size_t i = npages; i <= kExactLists; ++i) {
        if (!lists[i].empty()) return lists[i].front();
      }
    }
  }
  // Long runs: lowest address first, committed or not. Packing the heap
  // toward its start keeps freed blocks in use and the far end untouched,
  // where release finds it.
  Span* best = nullptr;
  for (SpanQueue* lists : {normal_, released_}) {
    for (Span* s = lists[0].front(); s != nullptr; s = s->next) {
      if (s->npages >= npages && (best == nullptr || s->start < best->start)) best = s;
    }
  }
  return best;
}

Span* PageHeap::Carve(Span* s, size_t npages) {
  Unlink(s);
  if (s->npages > npages) {
    Span* rest = NewSpanObject();
    rest->start = s->start + (npages << kPageShift);
    rest->npages = static_cast<uint32_t>(s->npages - npages);
    // Freed blocks tend to sit at the front of the span they merged into:
    // the estimate charges dirty pages to the front first.
    const uint32_t taken = s->dirty_pages < npages ? s->dirty_pages : static_cast<uint32_t>(npages);
    rest->dirty_pages = s->dirty_pages - taken;
    rest->clean = s->clean;
    rest->arena_id = s->arena_id;
    g_page_map.Set(rest->start, 1, rest);
    g_page_map.Set(rest->end() - kPageSize, 1, rest);
    Insert(rest);
    s->npages = static_cast<uint32_t>(npages);
  }
  s->zeroed = s->clean;
  s->dirty_pages = 0;
  s->state = SpanState::kLarge;  // in use; the caller may make it small
  g_page_map.Set(s->start, s->npages, s);
  in_use_spans_.fetch_add(1, std::memory_order_relaxed);
  in_use_bytes_.fetch_add(uint64_t{s->npages} << kPageShift, std::memory_order_relaxed);
  return s;
}

bool PageHeap::Grow(size_t npages) {
  const size_t bytes = ((npages << kPageShift) + kArenaSize - 1) / kArenaSize * kArenaSize;
  const Arena a = g_arenas.Grow(bytes);
  if (a.start == 0) return false;
  if (!g_page_map.Ensure(a.start, a.end)) return false;
  Span* s = NewSpanObject();
  s->start = a.start;
  s->npages = static_cast<uint32_t>(bytes >> kPageShift);
  s->dirty_pages = 0;  // never touched: no RSS, reads as zero
  s->clean = true;
  s->arena_id = ++next_arena_id_;
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
  return Carve(s, npages);
}

Span* PageHeap::AllocAligned(size_t npages, size_t align_pages) {
  if (align_pages <= 1) return Alloc(npages);
  Span* s = Alloc(npages + align_pages - 1);
  if (s == nullptr) return nullptr;
  const uintptr_t align = align_pages << kPageShift;
  const uintptr_t aligned = (s->start + align - 1) & ~(align - 1);
  // Give back the pages before and after the aligned run as spans of their own.
  auto split_off = [&](uintptr_t start, size_t pages) {
    if (pages == 0) return;
    Span* part = NewSpanObject();
    part->start = start;
    part->npages = static_cast<uint32_t>(pages);
    part->arena_id = s->arena_id;
    part->zeroed = s->zeroed;
    g_page_map.Set(start, pages, part);
    in_use_spans_.fetch_add(1, std::memory_order_relaxed);
    Free(part, /*touched=*/false);
  };
  const size_t head = (aligned - s->start) >> kPageShift;
  const size_t tail = s->npages - head - npages;
  const uintptr_t old_start = s->start;
  s->start = aligned;
  s->npages = static_cast<uint32_t>(npages);
  split_off(old_start, head);
  split_off(s->end(), tail);
  return s;
}

// s is in no list; returns the merged span, inserted into its list. Spans
// merge whatever their state so that freed neighbours can serve one large
// request; dirty page counts add up.
Span* PageHeap::MergeNeighbours(Span* s) {
  if (Span* left = g_page_map.Get(s->start - kPageSize);
      left != nullptr && left->state == SpanState::kFree && left->arena_id == s->arena_id &&
      left->end() == s->start) {
    Unlink(left);
    // The old boundary pages become inner pages (unless one is left's first).
    if (left->npages > 1) g_page_map.Set(left->end() - kPageSize, 1, nullptr);
    g_page_map.Set(s->start, 1, nullptr);
    left->npages += s->npages;
    left->dirty_pages += s->dirty_pages;
    left->clean = left->clean && s->clean;
    g_page_map.Set(left->end() - kPageSize, 1, left);
    DeleteSpanObject(s);
    s = left;
  }
  if (Span* right = g_page_map.Get(s->end());
      right != nullptr && right->state == SpanState::kFree && right->arena_id == s->arena_id &&
      right->start == s->end()) {
    Unlink(right);
    if (s->npages > 1) g_page_map.Set(s->end() - kPageSize, 1, nullptr);
    g_page_map.Set(right->start, 1, nullptr);
    s->npages += right->npages;
    s->dirty_pages += right->dirty_pages;
    s->clean = s->clean && right->clean;
    g_page_map.Set(s->end() - kPageSize, 1, s);
    DeleteSpanObject(right);
  }
  Insert(s);
  return s;
}

void PageHeap::Release(Span* s) {
  Unlink(s);
  madvise(reinterpret_cast<void*>(s->start), uintptr_t{s->npages} << kPageShift, MADV_DONTNEED);
  s->dirty_pages = 0;
  s->clean = true;
  MergeNeighbours(s);
}

void PageHeap::Free(Span* s, bool touched) {
  in_use_spans_.fetch_sub(1, std::memory_order_relaxed);
  in_use_bytes_.fetch_sub(uint64_t{s->npages} << kPageShift, std::memory_order_relaxed);
  s->state = SpanState::kFree;
  s->size_class = 0;
  s->owner.store(nullptr, std::memory_order_relaxed);
  s->list = SpanList::kNone;
  s->clean = !touched && s->zeroed;
  s->dirty_pages = s->clean ? 0 : s->npages;
  if (s->npages > 2) g_page_map.Set(s->start + kPageSize, s->npages - 2, nullptr);
  s = MergeNeighbours(s);
  if (free_committed_.load(std::memory_order_relaxed) > retain_limit()) {
    // Give back the committed long run at the highest address, the one
    // first fit will reach last; else the span just freed.
    Span* victim = s;
    for (Span* r = normal_[0].front(); r != nullptr; r = r->next) {
      if (victim == s || r->start > victim->start) victim = r;
    }
    Release(victim);
  }
}

}  // namespace libdump::internal
