#include "samplers/unwind/dwarf_unwind.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "samplers/unwind/allocation_stack_capture.h"
#include "samplers/unwind/frame_pointer_walk.h"
#include "samplers/unwind/unwind_table.h"

// Frameless assembly leaves that spin until told to stop, with rbp used as
// a counter (so the frame-pointer chain is garbage while they run), one with
// its CFI and one without. Each sets *started first.
extern "C" void dwarf_test_spin(std::atomic<int>* started, std::atomic<int>* stop);
extern "C" void dwarf_test_spin_no_cfi(std::atomic<int>* started, std::atomic<int>* stop);
asm(R"(
  .text
  .p2align 4
  .globl dwarf_test_spin
dwarf_test_spin:
  .cfi_startproc
  push %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbp, 0
  sub $40, %rsp
  .cfi_adjust_cfa_offset 40
  movl $1, (%rdi)
  mov $0x12345, %rbp
1:
  inc %rbp
  pause
  cmpl $0, (%rsi)
  je 1b
  add $40, %rsp
  .cfi_adjust_cfa_offset -40
  pop %rbp
  .cfi_adjust_cfa_offset -8
  .cfi_restore %rbp
  ret
  .cfi_endproc

  .p2align 4
  .globl dwarf_test_spin_no_cfi
dwarf_test_spin_no_cfi:
  push %rbp
  movl $1, (%rdi)
  mov $0x12345, %rbp
2:
  inc %rbp
  pause
  cmpl $0, (%rsi)
  je 2b
  pop %rbp
  ret
)");

namespace libdump::samplers {
namespace {

#define NO_TAIL_CALL asm volatile("" ::: "memory")

std::atomic<int> g_started{0}, g_stop{0};
uintptr_t g_pcs[kMaxFrames];
std::atomic<size_t> g_depth{0};

void OnSignal(int, siginfo_t*, void* uc) { g_depth.store(CaptureSignalStack(uc, g_pcs, kMaxFrames)); }

uintptr_t g_into_outer = 0;  // SpinCaller's return address, into SpinOuter

__attribute__((noipa)) void SpinCaller(bool cfi) {
  g_into_outer = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  if (cfi) dwarf_test_spin(&g_started, &g_stop);
  else dwarf_test_spin_no_cfi(&g_started, &g_stop);
  NO_TAIL_CALL;
}
__attribute__((noipa)) void SpinOuter(bool cfi) {
  SpinCaller(cfi);
  NO_TAIL_CALL;
}

// Samples a thread spinning in a leaf: the stack the handler captures.
size_t SampleSpinningThread(bool cfi) {
  struct sigaction sa {}, old {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR2, &sa, &old);
  g_started = 0;
  g_stop = 0;
  g_depth = 0;
  std::thread t([cfi] { SpinOuter(cfi); });
  while (g_started.load() == 0) std::this_thread::yield();
  pthread_kill(t.native_handle(), SIGUSR2);
  while (g_depth.load() == 0) std::this_thread::yield();
  g_stop = 1;
  t.join();
  sigaction(SIGUSR2, &old, nullptr);
  return g_depth.load();
}

bool Returns(uintptr_t pc, void* fn, void* next) {
  return pc > reinterpret_cast<uintptr_t>(fn) && pc <= reinterpret_cast<uintptr_t>(next);
}

TEST(DwarfUnwind, SignalInAFramelessLeafReachesItsCallers) {
  UnwindTables::Refresh();
  const size_t n = SampleSpinningThread(true);
  ASSERT_GE(n, 3u);
  // pcs[0] is in the leaf; then the return into SpinCaller, then SpinOuter:
  // the leaf's rbp is a counter, so only its rules lead there.
  ASSERT_LT(reinterpret_cast<uintptr_t>(&SpinCaller), reinterpret_cast<uintptr_t>(&SpinOuter));
  EXPECT_TRUE(Returns(g_pcs[1], reinterpret_cast<void*>(&SpinCaller), reinterpret_cast<void*>(&SpinOuter)));
  EXPECT_EQ(g_pcs[2], g_into_outer);
}

// Code without CFI falls back to the frame-pointer chain, counted; with rbp
// a counter, the chain ends at once.
TEST(DwarfUnwind, CodeWithoutRulesFallsBackAndIsCounted) {
  UnwindTables::Refresh();
  const uint64_t before = GetDwarfUnwindStats().no_rule;
  const size_t n = SampleSpinningThread(false);
  EXPECT_GE(n, 1u);
  EXPECT_EQ(GetDwarfUnwindStats().no_rule, before + 1);
  for (size_t i = 1; i < n; ++i) {
    EXPECT_FALSE(Returns(g_pcs[i], reinterpret_cast<void*>(&SpinCaller), reinterpret_cast<void*>(&SpinOuter)));
  }
}

// The heap profiler's walk: a caller of the allocator without a frame
// pointer that leaves rbp alone (as strdup does) made the chain skip its
// caller silently: rbp still held the caller's caller's frame. The rules
// for the walk's first frames find the caller.
__attribute__((noipa)) size_t AllocInner(uintptr_t* out, size_t max) {
  const size_t n = CaptureAllocationStack(out, max);
  NO_TAIL_CALL;
  return n;
}
__attribute__((noipa, optimize("omit-frame-pointer"))) size_t AllocFrameless(uintptr_t* out, size_t max) {
  const size_t n = AllocInner(out, max);
  NO_TAIL_CALL;
  return n;
}
__attribute__((noipa)) size_t AllocCaller(uintptr_t* out, size_t max) {
  const size_t n = AllocFrameless(out, max);
  NO_TAIL_CALL;
  return n;
}

// Where the chain ends in frames libunwind has not vouched for (as here),
// the walk used to be redone by libunwind (allocation_stack_capture.h), which found the
// caller at ~4x the cost; where it ends on glibc's zero rbp the skip went
// unnoticed. Now the rules find it on the frame-pointer path: no libunwind.
TEST(DwarfUnwind, HeapWalkKeepsTheCallerOfAFramelessFunction) {
  UnwindTables::Refresh();
  uintptr_t pcs[kMaxFrames];
  size_t n = 0;
  AllocStackStats before{}, after{};
  std::thread([&] {
    AllocCaller(pcs, kMaxFrames);  // the walk's end gets its verdict
    before = GetAllocStackStats();
    n = AllocCaller(pcs, kMaxFrames);
    after = GetAllocStackStats();
  }).join();
  EXPECT_EQ(after.unwound, before.unwound) << "redone by libunwind";
  EXPECT_EQ(after.frame_pointer, before.frame_pointer + 1);
  ASSERT_GE(n, 3u);
  // pcs[0] returns into AllocInner, pcs[1] into AllocFrameless, pcs[2] into
  // AllocCaller (its call of AllocFrameless, a few bytes after its start).
  const uintptr_t caller = reinterpret_cast<uintptr_t>(&AllocCaller);
  EXPECT_GT(pcs[2], caller);
  EXPECT_LT(pcs[2], caller + 64) << "the chain skipped AllocCaller";
}

// The reader trusts the thread's own stack and proves anything else mapped.
TEST(DwarfUnwind, ReaderRefusesUnmappedAndMisaligned) {
  uintptr_t local = 42;
  StackReader r(reinterpret_cast<uintptr_t>(&local) & ~uintptr_t{7});
  uintptr_t v = 0;
  ASSERT_TRUE(r.Read(reinterpret_cast<uintptr_t>(&local), &v));
  EXPECT_EQ(v, 42u);
  EXPECT_FALSE(r.Read(reinterpret_cast<uintptr_t>(&local) + 3, &v));
  EXPECT_FALSE(r.Read(0x10, &v));
  char* p = static_cast<char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  *reinterpret_cast<uintptr_t*>(p) = 7;
  EXPECT_TRUE(r.Read(reinterpret_cast<uintptr_t>(p), &v));
  EXPECT_EQ(v, 7u);
  munmap(p, 4096);
  StackReader fresh(reinterpret_cast<uintptr_t>(&local) & ~uintptr_t{7});
  EXPECT_FALSE(fresh.Read(reinterpret_cast<uintptr_t>(p), &v));
}

// Garbage registers end the walk, never the process.
TEST(DwarfUnwind, GarbageRegistersStopSafely) {
  UnwindTables::Refresh();
  uintptr_t local = 0;
  const uintptr_t sp = reinterpret_cast<uintptr_t>(&local) & ~uintptr_t{15};
  StackReader r(sp);
  uintptr_t out[kMaxFrames];
  const UnwindPolicy policy{8, false};
  for (uintptr_t pc : {uintptr_t{0}, uintptr_t{0x1000}, reinterpret_cast<uintptr_t>(&SpinOuter)}) {
    for (uintptr_t fp : {uintptr_t{0}, uintptr_t{0x10}, sp - 64, sp + 3, ~uintptr_t{0} - 15}) {
      UnwindStack(pc, sp, fp, true, policy, r, out, kMaxFrames);
    }
  }
  SUCCEED();
}

}  // namespace
}  // namespace libdump::samplers
