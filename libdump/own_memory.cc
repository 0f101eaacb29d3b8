#include "own_memory.h"

#include <atomic>

#include "allocator.h"
#include "libdump/typed.h"

namespace libdump::internal {

constinit thread_local OwnComponent t_own_component __attribute__((tls_model("initial-exec"))) = OwnComponent::kNone;

namespace {

constexpr size_t kComponents = static_cast<size_t>(OwnComponent::kCount);
// Far enough below 0 that no run of allocations brings the countdown back up.
constexpr int64_t kOwnCountdown = INT64_MIN / 2;

constinit thread_local int64_t t_saved_countdown __attribute__((tls_model("initial-exec"))) = 0;

std::atomic<uint32_t> g_own_ids[kComponents] = {};
TypeInfo g_own_types[kComponents] = {};

}  // namespace

uint32_t OwnTypeId(OwnComponent c) {
  const size_t i = static_cast<size_t>(c);
  if (i == 0 || i >= kComponents) return 0;
  uint32_t id = g_own_ids[i].load(std::memory_order_acquire);
  if (id != 0) return id;
  // Two threads may race to register: the loser's type stays registered,
  // unused (a type record without objects).
  static std::atomic<bool> taken[kComponents] = {};
  if (taken[i].exchange(true, std::memory_order_acq_rel)) {
    while ((id = g_own_ids[i].load(std::memory_order_acquire)) == 0) {
    }
    return id;
  }
  g_own_types[i] = TypeInfo{0, OwnComponentName(c), 0, nullptr, 0};
  id = RegisterType(&g_own_types[i]);
  g_own_ids[i].store(id, std::memory_order_release);
  return id;
}

bool IsOwnType(uint32_t type_id) {
  if (type_id == 0) return false;
  for (size_t i = 1; i < kComponents; ++i) {
    if (g_own_ids[i].load(std::memory_order_relaxed) == type_id) return true;
  }
  return false;
}

OwnComponent SetOwnComponent(OwnComponent c) {
  const OwnComponent prev = t_own_component;
  // Every component's type at once, at the first use of any: a dump lists
  // the registered types before its stop, and a component first used during
  // it (the dump's buffers) must be among them.
  static std::atomic<bool> registered{false};
  if (c != OwnComponent::kNone && !registered.load(std::memory_order_acquire)) {
    for (size_t i = 1; i < kComponents; ++i) OwnTypeId(static_cast<OwnComponent>(i));
    registered.store(true, std::memory_order_release);
  }
  ThreadHeap* h = t_heap;
  if (h == nullptr) h = AttachHeap();
  // Under the debug heap every allocation leaves the fast path already.
  if (!g_debug_heap) {
    if (prev == OwnComponent::kNone && c != OwnComponent::kNone) {
      t_saved_countdown = h->sample_left;
      h->sample_left = kOwnCountdown;
    } else if (prev != OwnComponent::kNone && c == OwnComponent::kNone && h->sample_left == kOwnCountdown) {
      // Unless a countdown was drawn inside (SetSampleInterval: the heap
      // profiler started from libdump's own work), which is the one to keep.
      h->sample_left = t_saved_countdown;
    }
  }
  t_own_component = c;
  return prev;
}

void* AllocateOwn(size_t size) {
  const OwnComponent c = t_own_component;
  // The allocation below takes the ordinary paths, which must not come back here.
  t_own_component = OwnComponent::kNone;
  ThreadHeap* h = t_heap;
  int64_t forced = 0;
  if (!g_debug_heap) {
    forced = h->sample_left;
    h->sample_left = INT64_MAX;
  }
  void* p = size <= kMaxSmallSize ? AllocateOwnSlot(size, OwnTypeId(c)) : AllocateTyped(size, OwnTypeId(c), 1);
  if (!g_debug_heap) h->sample_left = forced;
  t_own_component = c;
  return p;
}

}  // namespace libdump::internal
