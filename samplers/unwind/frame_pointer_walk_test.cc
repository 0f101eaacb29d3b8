#include "samplers/unwind/frame_pointer_walk.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

namespace libdump::samplers {
namespace {

// The empty asm after each call keeps it from becoming a tail call, which
// would take the caller's frame off the stack.
#define NO_TAIL_CALL asm volatile("" ::: "memory")
__attribute__((noipa)) size_t Inner(uintptr_t* out, size_t max) {
  const size_t n = CaptureCurrentStack(out, max, 0);
  NO_TAIL_CALL;
  return n;
}
__attribute__((noipa)) size_t Middle(uintptr_t* out, size_t max) {
  const size_t n = Inner(out, max);
  NO_TAIL_CALL;
  return n;
}
__attribute__((noipa)) size_t Outer(uintptr_t* out, size_t max) {
  const size_t n = Middle(out, max);
  NO_TAIL_CALL;
  return n;
}

using Fn = size_t (*)(uintptr_t*, size_t);
// Whether return address pc lies in f, which ends where the next function
// starts (dladdr cannot tell: the executable does not export these). GCC
// emits them in source order.
bool In(uintptr_t pc, Fn f, Fn next) {
  return pc > reinterpret_cast<uintptr_t>(f) && pc <= reinterpret_cast<uintptr_t>(next);
}

TEST(StackWalk, CurrentStackNamesTheCallers) {
  uintptr_t pcs[kMaxFrames];
  const size_t n = Outer(pcs, kMaxFrames);
  ASSERT_GE(n, 3u);
  // out[0] returns into Inner (the caller of CaptureCurrentStack).
  ASSERT_LT(reinterpret_cast<uintptr_t>(&Inner), reinterpret_cast<uintptr_t>(&Middle));
  ASSERT_LT(reinterpret_cast<uintptr_t>(&Middle), reinterpret_cast<uintptr_t>(&Outer));
  EXPECT_TRUE(In(pcs[0], &Inner, &Middle));
  EXPECT_TRUE(In(pcs[1], &Middle, &Outer));
  // Outer is a few dozen bytes long.
  EXPECT_TRUE(In(pcs[2], &Outer, reinterpret_cast<Fn>(reinterpret_cast<uintptr_t>(&Outer) + 128)));
  uintptr_t two[2];
  EXPECT_EQ(Outer(two, 2), 2u);
}

// Garbage frame pointers end the walk instead of faulting: unmapped
// memory, a frame below the stack pointer, a misaligned one, a loop.
TEST(StackWalk, CorruptChainsStopSafely) {
  uintptr_t out[kMaxFrames];
  const size_t page = 4096;
  char* p = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  munmap(p + page, page);
  // A frame whose saved fp points into the unmapped page just above.
  uintptr_t* f = reinterpret_cast<uintptr_t*>(p + page - 16);
  f[0] = reinterpret_cast<uintptr_t>(p + page + 64);
  f[1] = 0x401000;
  EXPECT_EQ(WalkFramePointers(reinterpret_cast<uintptr_t>(f), reinterpret_cast<uintptr_t>(p), out, kMaxFrames), 1u);
  // Straddling into the unmapped page.
  EXPECT_EQ(WalkFramePointers(reinterpret_cast<uintptr_t>(p + page - 8), reinterpret_cast<uintptr_t>(p), out, kMaxFrames), 0u);
  // A self loop and a downward link.
  f[0] = reinterpret_cast<uintptr_t>(f);
  EXPECT_EQ(WalkFramePointers(reinterpret_cast<uintptr_t>(f), reinterpret_cast<uintptr_t>(p), out, kMaxFrames), 1u);
  f[0] = reinterpret_cast<uintptr_t>(p);
  EXPECT_EQ(WalkFramePointers(reinterpret_cast<uintptr_t>(f), reinterpret_cast<uintptr_t>(p), out, kMaxFrames), 1u);
  EXPECT_EQ(WalkFramePointers(reinterpret_cast<uintptr_t>(f) + 3, reinterpret_cast<uintptr_t>(p), out, kMaxFrames), 0u);
  EXPECT_EQ(WalkFramePointers(0x10, 0, out, kMaxFrames), 0u);
  munmap(p, page);
}

}  // namespace
}  // namespace libdump::samplers
