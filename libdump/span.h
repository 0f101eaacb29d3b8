// A span: a run of pages that is free, holds slots of one size class, or
// holds one large object. Span metadata lives outside the heap, so walking it
// never reads object memory.
//
// Liveness of a small slot is `live & ~remote`: the owning thread sets and
// clears `live` with plain stores; other threads free by setting `remote`
// atomically, and the owner later folds those bits into `live`. No per-object
// list exists anywhere, free memory included.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.h"
#include "size_class.h"

namespace libdump::internal {

struct ThreadHeap;

enum class SpanState : uint8_t { kFree = 0, kSmall = 1, kLarge = 2 };

// Where a small span sits from its owner's point of view.
enum class SpanList : uint8_t { kNone = 0, kCurrent, kPartial, kFull, kOrphan };

// Per-slot types, which only spans holding typed objects need: allocated on
// first use. Heap samples are marked in the span itself (Span::sampled): a
// sample is a few hundred allocations apart in a busy program, so each one
// finds the caches cold, and a side table would cost it a 4 KiB table to set
// up plus a cache miss at allocation and another at free.
struct SpanExtra {
  std::atomic<uint64_t> typed[kBitmapWords];  // which slots' entries below are set
  std::atomic<uint32_t> type_id[kMaxSlotsPerSpan];
  std::atomic<uint32_t> count[kMaxSlotsPerSpan];  // array length for make_array
  SpanExtra* next_free;
};

// The owner's words for 64 slots.
struct SlotBits {
  std::atomic<uint64_t> live;
  // Slots that are typed (see Span::extra) or sampled: their frees take the
  // slow path, which clears them; every other free in the span stays fast.
  // Written only by the span's owner (or, for an orphan, the holder of its
  // list's lock), like `live`: set at allocation, cleared by a local free or,
  // for a slot another thread freed, when the owner folds the remote bits in
  // (CollectRemote). The same holds for `sampled` and the side table's
  // `typed`, type ids and counts, so none of them needs an atomic
  // read-modify-write.
  std::atomic<uint64_t> annotated;
};

// alignas(64): the first line holds everything a local free reads or
// writes in a span of up to 64 slots (the fields a free tests, then the first
// pair of slot words); a free in a bigger span reads one more line, its
// pair's. Before, the header, the pair and the remote word were three lines,
// and in a heap bigger than L1 a free missed on each.
struct alignas(64) Span {
  uintptr_t start = 0;
  uint64_t div_magic = 0;
  std::atomic<ThreadHeap*> owner{nullptr};
  uint32_t slot_size = 0;  // small: the class size; large: npages * kPageSize
  uint32_t used = 0;  // owner only: slots live or reserved in the owner's cache
  // Owner only: a local free that leaves `used` at or below this moves the
  // span between lists or gives it back (1 to give back an empty span; higher
  // on the full list, where the span waits until an eighth of it is free: a
  // sparse bitmap would cost a refill per allocation).
  uint32_t slow_at = 1;
  // Remote frees announced and not yet folded into live. While it is down
  // (no remote free since the owner last collected) a local free need not
  // read the remote words to rule out a slot freed twice.
  std::atomic<uint32_t> remote_pending{0};
  SpanState state = SpanState::kFree;
  uint8_t size_class = 0;
  SpanList list = SpanList::kNone;
  // In-use spans: pages were zero when handed out.
  bool zeroed = false;
  uint32_t npages = 0;
  SlotBits bits[kBitmapWords];
  uint32_t nslots = 0;
  // Free spans: how many pages are committed (exact: the page heap's
  // committed bitmap), for the release policy and statistics.
  uint32_t dirty_pages = 0;
  uint32_t arena_id = 0;  // free spans merge only within one arena
  // One line, the one a sampled slot's free reads after the span's header:
  // the heap profiler's token for one sampled object of the span (its
  // bucket's free counter, SampleHooks), the side table, the sampled bits
  // of the first 320 slots.
  // sample_slot is that object's slot index + 1 (0: none; a large span's
  // object is 1). Written by the owner when it samples a slot while no token
  // is kept (release, after sample_token), cleared by whichever thread frees
  // that slot; a span's other sampled objects are the profiler's to find.
  // Keeping the token here is what spares a sample and its free a lookup in
  // a table of their own, on a line every sample would miss (Go hangs the
  // bucket off the span the same way, as a "special").
  std::atomic<uintptr_t> sample_token{0};
  std::atomic<uint32_t> sample_slot{0};
  std::atomic<SpanExtra*> extra{nullptr};
  // Slots chosen by the heap profiler's sampling; same single writer as
  // annotated.
  std::atomic<uint64_t> sampled[kBitmapWords];
  // Large spans keep their single object's annotations inline.
  std::atomic<uint32_t> large_type_id{0};
  std::atomic<uint32_t> large_count{0};
  std::atomic<bool> large_sampled{false};
  // A large span whose object was freed into a thread's cache of large spans
  // (large_cache.h): it holds no object, and the page heap does not have it.
  std::atomic<bool> large_free{false};
  Span* prev = nullptr;
  Span* next = nullptr;
  // Written by other threads: on their own cache line, away from the
  // owner's live bits and counters.
  alignas(64) std::atomic<uint64_t> remote[kBitmapWords];

  uintptr_t end() const { return start + (uintptr_t{npages} << kPageShift); }
  uint32_t nwords() const { return (nslots + 63) / 64; }
  // Bits of word w that name real slots.
  uint64_t ValidMask(uint32_t w) const {
    const uint32_t left = nslots - w * 64;
    return left >= 64 ? ~uint64_t{0} : (uint64_t{1} << left) - 1;
  }
  // Slot index of an address inside the span; exact for every offset below
  // 2^(kDivShift - 15), far more than a span spans.
  uint32_t SlotIndex(uintptr_t addr) const {
    return static_cast<uint32_t>(((addr - start) * div_magic) >> kDivShift);
  }
  uintptr_t SlotAddress(uint32_t i) const { return start + uintptr_t{i} * slot_size; }
  // The kept sample as one consistent pair (slot index + 1, token), or
  // slot 0. The slot is read again after the token: a free and a new sample
  // in between would pair the slot with another object's token.
  uint32_t KeptSample(uintptr_t* token) const {
    const uint32_t slot = sample_slot.load(std::memory_order_acquire);
    *token = sample_token.load(std::memory_order_relaxed);
    return sample_slot.load(std::memory_order_acquire) == slot ? slot : 0;
  }
  bool SlotLive(uint32_t i) const {
    const uint64_t m = uint64_t{1} << (i & 63);
    return (bits[i >> 6].live.load(std::memory_order_acquire) & ~remote[i >> 6].load(std::memory_order_acquire) & m) != 0;
  }
};
static_assert(offsetof(Span, bits) + sizeof(SlotBits) == 64, "a span's first slot pair ends its first line");
static_assert(offsetof(Span, sample_token) / 64 == offsetof(Span, sampled) / 64 &&
                  offsetof(Span, sample_slot) / 64 == offsetof(Span, sampled) / 64 &&
                  offsetof(Span, extra) / 64 == offsetof(Span, sampled) / 64,
              "a sampled free reads the token, the side table and the first sampled words in one line");

// Read-modify-writes of a word only one thread writes (see SlotBits): a
// load and a store. A locked instruction would wait for every store the
// program has in flight, which is what a heap sample mostly paid for.
inline void SetBits(std::atomic<uint64_t>& w, uint64_t m, std::memory_order order = std::memory_order_relaxed) {
  w.store(w.load(std::memory_order_relaxed) | m, order);
}
inline void ClearBits(std::atomic<uint64_t>& w, uint64_t m, std::memory_order order = std::memory_order_relaxed) {
  w.store(w.load(std::memory_order_relaxed) & ~m, order);
}

// Set bits of a bitmap word. Without -mpopcnt, __builtin_popcountll is a
// call into libgcc; this is a dozen inline instructions.
inline uint32_t CountBits(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ULL;
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<uint32_t>((x * 0x0101010101010101ULL) >> 56);
}

// Intrusive doubly linked list of spans.
class SpanQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  Span* front() const { return head_; }
  void PushFront(Span* s) {
    s->prev = nullptr;
    s->next = head_;
    if (head_) head_->prev = s;
    head_ = s;
  }
  void Remove(Span* s) {
    if (s->prev) s->prev->next = s->next; else head_ = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = nullptr;
  }
  Span* PopFront() {
    Span* s = head_;
    if (s) Remove(s);
    return s;
  }

 private:
  Span* head_ = nullptr;
};

}  // namespace libdump::internal
