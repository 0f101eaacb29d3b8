// libdump's own allocations: while a thread has a component set, every
// allocation it makes (its own, and those of the libraries it calls: libdw,
// libunwind, the demangler) is typed as that component's (own_component.h),
// at no cost to the program's allocations.
//
// The fast path is not touched: setting a component drives the thread's
// sampling countdown far below zero, as the debug heap does, so that every
// small allocation leaves the fast path for AllocateSampled, which hands it
// to AllocateOwn; large ones reach AllocateSlow, which does the same. Own
// allocations are never heap-profile samples: the countdown is given back
// when the thread leaves the component.
#pragma once

#include <cstddef>
#include <cstdint>

#include "own_component.h"

namespace libdump::internal {

extern constinit thread_local OwnComponent t_own_component __attribute__((tls_model("initial-exec")));

// Sets the calling thread's component (kNone ends it); returns the previous one.
OwnComponent SetOwnComponent(OwnComponent c);
// The registered type id of component c's objects (registered on first use).
uint32_t OwnTypeId(OwnComponent c);
// Whether a registered type id is one of the components'.
bool IsOwnType(uint32_t type_id);
// The allocation of `size` bytes that the slow paths hand over while
// t_own_component is set: typed as the component's.
void* AllocateOwn(size_t size);

// Sets a component for a scope.
class OwnScope {
 public:
  explicit OwnScope(OwnComponent c) : prev_(SetOwnComponent(c)) {}
  ~OwnScope() { SetOwnComponent(prev_); }
  OwnScope(const OwnScope&) = delete;
  OwnScope& operator=(const OwnScope&) = delete;

 private:
  OwnComponent prev_;
};

}  // namespace libdump::internal
