#include "samplers/unwind/allocation_stack_capture.h"

#include <gtest/gtest.h>

#include <thread>

#include "samplers/unwind/frame_pointer_walk.h"

namespace libdump::samplers {
namespace {

#define NO_TAIL_CALL asm volatile("" ::: "memory")

__attribute__((noipa)) size_t Inner(uintptr_t* out, size_t max) {
  const size_t n = CaptureAllocationStack(out, max);
  NO_TAIL_CALL;
  return n;
}
__attribute__((noipa)) size_t WithFramePointers(uintptr_t* out, size_t max) {
  const size_t n = Inner(out, max);
  NO_TAIL_CALL;
  return n;
}
// Code built without frame pointers may keep anything in rbp; this keeps a
// small integer there across the call, so the chain breaks at Inner's record.
__attribute__((noipa, optimize("omit-frame-pointer"))) size_t WithoutFramePointers(uintptr_t* out, size_t max) {
  register uintptr_t junk asm("rbp") = 0x10;
  asm volatile("" : "+r"(junk));
  const size_t n = Inner(out, max);
  asm volatile("" ::"r"(junk));
  return n;
}
__attribute__((noipa)) size_t CallerOfWithout(uintptr_t* out, size_t max) {
  const size_t n = WithoutFramePointers(out, max);
  NO_TAIL_CALL;
  return n;
}
__attribute__((noipa)) void AfterCallerOfWithout() {}

template <class F>
void OnThread(F f) {
  std::thread(f).join();
}

// Whether one of pcs returns into fn. A function ends where the next of
// this file's functions starts (the compiler need not keep source order).
bool Contains(const uintptr_t* pcs, size_t n, void* fn) {
  const uintptr_t f = reinterpret_cast<uintptr_t>(fn);
  uintptr_t end = f + 4096;
  for (void* g : {reinterpret_cast<void*>(&Inner), reinterpret_cast<void*>(&WithFramePointers),
                  reinterpret_cast<void*>(&WithoutFramePointers), reinterpret_cast<void*>(&CallerOfWithout),
                  reinterpret_cast<void*>(&AfterCallerOfWithout)}) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(g);
    if (a > f && a < end) end = a;
  }
  for (size_t i = 0; i < n; ++i) {
    if (pcs[i] > f && pcs[i] <= end) return true;
  }
  return false;
}

TEST(AllocStack, FramePointerWalkOnceItsEndIsTrusted) {
  OnThread([] {
    uintptr_t first[kMaxFrames], pcs[kMaxFrames];
    const size_t n1 = WithFramePointers(first, kMaxFrames);
    const AllocStackStats before = GetAllocStackStats();
    const size_t n = WithFramePointers(pcs, kMaxFrames);
    const AllocStackStats after = GetAllocStackStats();
    // The thread's frames from here up have frame pointers; libunwind only
    // adds the thread-start frames, so the walk's end is trusted and the
    // second capture never calls libunwind, yet gives the same stack.
    EXPECT_EQ(after.frame_pointer, before.frame_pointer + 1);
    EXPECT_EQ(after.unwound, before.unwound);
    ASSERT_EQ(n, n1);
    ASSERT_GE(n, 3u);
    // out[0] returns into Inner, out[1] into WithFramePointers (not its
    // first instruction: a return address follows a call).
    EXPECT_TRUE(Contains(pcs, 1, reinterpret_cast<void*>(&Inner)));
    EXPECT_TRUE(Contains(pcs + 1, 1, reinterpret_cast<void*>(&WithFramePointers)));
    // Same frames as the first (libunwind-checked) capture, except where the
    // two calls return to in this lambda (out[2]).
    for (size_t i = 0; i < n; ++i) {
      if (i != 2) {
        EXPECT_EQ(pcs[i], first[i]) << i;
      }
    }
    EXPECT_NE(pcs[2], first[2]);
  });
}

TEST(AllocStack, BrokenChainFallsBackToLibunwind) {
  OnThread([] {
    for (int round = 0; round < 2; ++round) {
      uintptr_t pcs[kMaxFrames];
      const AllocStackStats before = GetAllocStackStats();
      const size_t n = CallerOfWithout(pcs, kMaxFrames);
      const AllocStackStats after = GetAllocStackStats();
      // The frame-pointer chain ends inside WithoutFramePointers; only
      // libunwind sees its caller. The second round takes the cached verdict
      // straight to libunwind.
      EXPECT_EQ(after.unwound, before.unwound + 1) << "round " << round;
      EXPECT_TRUE(Contains(pcs, n, reinterpret_cast<void*>(&WithoutFramePointers))) << "round " << round;
      EXPECT_TRUE(Contains(pcs, n, reinterpret_cast<void*>(&CallerOfWithout))) << "round " << round;
    }
  });
}

}  // namespace
}  // namespace libdump::samplers
