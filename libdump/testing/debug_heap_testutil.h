// For the tests of what the debug heap (LIBDUMP_DEBUG_HEAP=1) changes on
// purpose: last-freed-first reuse, and a free that writes nothing past the
// slot's first word. They skip when the suite runs under it.
#pragma once

#include "debug_heap.h"
#include "libdump/heap.h"

namespace libdump::testing {

// True when the debug heap is on (the allocator reads the variable at its
// first allocation, made here if need be).
inline bool DebugHeapOn() {
  Free(Allocate(16));
  return internal::g_debug_heap;
}

}  // namespace libdump::testing

#define LIBDUMP_SKIP_UNDER_DEBUG_HEAP(why) \
  if (::libdump::testing::DebugHeapOn()) GTEST_SKIP() << "the debug heap " why
