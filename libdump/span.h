// A span: a run of pages that is free, holds slots of one size class, or
// holds one large object. Span metadata lives outside the heap, so walking it
// never reads object memory.
//
// A small span belongs to its class's central list (central_freelist.h), not
// to a thread: its `live` bit says a slot has left the central list, for an
// object or for a thread's free list or a transfer batch (thread_cache.h).
// The walk subtracts what those lists hold (cached_slots.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.h"
#include "size_class.h"

namespace libdump::internal {

// sample_slot while its claimer writes the token.
inline constexpr uint32_t kSampleSlotBusy = ~uint32_t{0};

enum class SpanState : uint8_t { kFree = 0, kSmall = 1, kLarge = 2 };

// Where a small span sits in its class's central list: on the list of spans
// with free slots, or off it (every slot handed out).
enum class SpanList : uint8_t { kNone = 0, kNonempty, kFull };

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

// The words of 64 slots.
struct SlotBits {
  // Written under the class's central lock only (plain read-modify-writes).
  std::atomic<uint64_t> live;
  // Slots that are typed (see Span::extra) or sampled: their frees take the
  // slow path, which clears them; every other free in the span stays fast.
  // Set by the thread that allocates the slot, cleared by the one that frees
  // it: threads holding other slots of the word write it too, so it (like
  // `sampled` and the side table's `typed`) changes by atomic
  // read-modify-writes, paid only by annotated slots. A slot's own entries
  // (type id, count) have one writer at a time, whoever holds the slot.
  std::atomic<uint64_t> annotated;
};

// alignas(64): the first line holds everything a free reads in a span of up
// to 64 slots (the fields it tests, then the first pair of slot words); a
// free in a bigger span reads one more line, its pair's.
struct alignas(64) Span {
  uintptr_t start = 0;
  uint64_t div_magic = 0;
  uint32_t slot_size = 0;  // small: the class size; large: npages * kPageSize
  uint32_t used = 0;  // under the central lock: slots with their live bit set
  SpanState state = SpanState::kFree;
  uint8_t size_class = 0;
  SpanList list = SpanList::kNone;
  // In-use spans: pages were zero when handed out.
  bool zeroed = false;
  // Small spans: one of libdump's own (own_memory.h), whose slots never
  // reach a thread's list and whose pages have no tags.
  bool own = false;
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
  // object is 1). Claimed by the thread that samples a slot while no token
  // is kept (a compare-exchange from 0 to kSampleSlotBusy, then the token,
  // then the slot with release), cleared by whichever thread frees that slot; a span's other sampled objects are the profiler's to find.
  // Keeping the token here is what spares a sample and its free a lookup in
  // a table of their own, on a line every sample would miss (Go hangs the
  // bucket off the span the same way, as a "special").
  alignas(64) std::atomic<uintptr_t> sample_token{0};
  std::atomic<uint32_t> sample_slot{0};
  std::atomic<SpanExtra*> extra{nullptr};
  // Slots chosen by the heap profiler's sampling; written like annotated.
  std::atomic<uint64_t> sampled[kBitmapWords];
  // Large spans keep their single object's annotations inline.
  std::atomic<uint32_t> large_type_id{0};
  std::atomic<uint32_t> large_count{0};
  std::atomic<bool> large_sampled{false};
  // A large span whose object was freed into a thread's cache of large spans
  // (large_cache.h): it holds no object, and the page heap does not have it.
  std::atomic<bool> large_free{false};
  // Set while a page of the span gets its tag back (RetagPage in
  // allocator.cc): a typed allocation that sees it takes the central lock.
  std::atomic<bool> retagging{false};
  Span* prev = nullptr;
  Span* next = nullptr;

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
    if (slot == kSampleSlotBusy) return 0;
    *token = sample_token.load(std::memory_order_relaxed);
    return sample_slot.load(std::memory_order_acquire) == slot ? slot : 0;
  }
  // Out of the central list: live, or on a thread's list or in a batch.
  bool SlotOut(uint32_t i) const {
    return (bits[i >> 6].live.load(std::memory_order_acquire) >> (i & 63)) & 1;
  }
};
static_assert(offsetof(Span, bits) + sizeof(SlotBits) <= 64, "a span's first slot pair is on its first line");
static_assert(offsetof(Span, sample_token) / 64 == offsetof(Span, sampled) / 64 &&
                  offsetof(Span, sample_slot) / 64 == offsetof(Span, sampled) / 64 &&
                  offsetof(Span, extra) / 64 == offsetof(Span, sampled) / 64,
              "a sampled free reads the token, the side table and the first sampled words in one line");

// Read-modify-writes of a word only one thread writes at a time (live, under
// the central lock): a load and a store.
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
