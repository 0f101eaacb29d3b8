#include "libdump/typed.h"

#include <cstring>

#include "allocator.h"
#include "fatal.h"
#include "lock.h"

namespace libdump {

namespace {

constexpr uint32_t kMaxTypes = 1 << 16;
std::atomic<const TypeInfo*> g_types[kMaxTypes + 1] = {};
std::atomic<uint32_t> g_type_count{0};

}  // namespace

uint32_t RegisterType(TypeInfo* info) {
  const uint32_t id = g_type_count.fetch_add(1, std::memory_order_relaxed) + 1;
  if (id > kMaxTypes) internal::Fatal("too many registered types", nullptr);
  info->id = id;
  g_types[id].store(info, std::memory_order_release);
  return id;
}

const TypeInfo* FindType(uint32_t id) {
  return id == 0 || id > kMaxTypes ? nullptr : g_types[id].load(std::memory_order_acquire);
}

uint32_t TypeCount() {
  const uint32_t n = g_type_count.load(std::memory_order_acquire);
  return n < kMaxTypes ? n : kMaxTypes;
}

namespace internal {

void* AllocateTyped(size_t size, uint32_t type_id, uint32_t count) {
  // One allocator section around allocation, zeroing and tagging: a heap dump
  // stops threads only outside sections, so it sees either no object or a
  // zeroed one of the right type, never a typed slot still holding the stale
  // pointers of its previous occupant (Go zeroes pointerful objects likewise).
  AllocatorSection section;
  void* p = AllocateFast(size);
  if (p != nullptr) TypeNewObject(p, size, type_id, count);
  return p;
}

void TypeNewObject(void* p, size_t size, uint32_t type_id, uint32_t count) {
  std::memset(p, 0, size);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Span* s = g_page_map.Get(a);
  if (s->state == SpanState::kLarge) {
    s->large_type_id.store(type_id, std::memory_order_relaxed);
    s->large_count.store(count, std::memory_order_relaxed);
  } else if (type_id != 0) {
    const uint32_t i = s->SlotIndex(a);
    SpanExtra* e = AnnotateSlot(s, i);
    e->count[i].store(count, std::memory_order_relaxed);
    e->type_id[i].store(type_id, std::memory_order_release);
    SetBits(e->typed[i >> 6], uint64_t{1} << (i & 63));
  }
}

uint32_t TypedCount(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const Span* s = g_page_map.Get(a);
  if (s == nullptr) return 0;
  if (s->state == SpanState::kLarge) return s->large_count.load(std::memory_order_relaxed);
  const SpanExtra* e = s->extra.load(std::memory_order_acquire);
  return e == nullptr ? 0 : e->count[s->SlotIndex(a)].load(std::memory_order_relaxed);
}

}  // namespace internal

}  // namespace libdump
