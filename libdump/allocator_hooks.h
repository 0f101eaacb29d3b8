// What other parts of libdump and the profilers hang on the allocator: the
// heap profiler's sampling hooks, the out-of-memory hook and the hook run when
// a thread leaves an allocator section (a deferred stop of the world). The
// setters are defined in allocator.cc, beside the slow paths that call the
// hooks; nothing here depends on the allocator's parts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace libdump::internal {

// hook runs on a thread each time it leaves its outermost allocator section.
void SetSectionExitHook(void (*hook)());

// The heap profiler's side of sampling. Neither hook may allocate from this
// heap. Unset (null) by default.
struct SampleHooks {
  // After a sampled object is allocated. Returns the object's token: the
  // address of the std::atomic<uint64_t> that counts the frees of its
  // bucket, never null. keeps_token: the allocator keeps the token (one per
  // span, beside the span's sampled bits) and, when the object is freed,
  // adds 1 to the counter itself (release), without calling the profiler: a
  // call into another library at every sampled free cost more than the add.
  // Otherwise the profiler must find the object itself at `freed`.
  uintptr_t (*allocated)(void* p, size_t size, bool keeps_token);
  // Before a sampled object whose token the allocator did not keep is freed.
  void (*freed)(void* p, size_t size);
};
void SetSampleHooks(const SampleHooks* hooks);
// The free of a sample whose token was kept, counted as SampleHooks says.
inline void CountKeptSampleFree(uintptr_t token) {
  reinterpret_cast<std::atomic<uint64_t>*>(token)->fetch_add(1, std::memory_order_release);
}

// Called when a request fails because the system gives no more memory (an
// arena cannot be mapped), once per failing request, on the requesting
// thread, before malloc returns null or operator new throws. It runs outside
// every allocator lock and section, so it may stop the world and walk the
// heap. A failure inside the hook does not call it again. Null by default.
void SetOutOfMemoryHook(void (*hook)(size_t requested));

}  // namespace libdump::internal
