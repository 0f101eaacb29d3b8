#include "samplers/unwind/allocation_stack_capture.h"

#include <libunwind.h>

#include <atomic>

#include "platform/capture/loader_fork.h"
#include "samplers/unwind/dwarf_unwind.h"
#include "samplers/unwind/frame_pointer_walk.h"
#include "samplers/unwind/unwind_table.h"

extern "C" void* __libc_stack_end;  // glibc: the initial thread's stack top

namespace libdump::samplers {
namespace {

// Per thread, on one line that every sample reads: the counters (a counter
// every sampling thread increments would cost each sample a locked add on a
// line the other threads keep taking away), the two ends StackTop compares
// with, read once, and the last return address a broken walk ended at that
// the verdicts below trust. Read at each sample, the thread pointer's line,
// __libc_stack_end's and the verdict's were three more cache misses: between
// two samples a busy program evicts them.
// initial-exec: the general model may call __tls_get_addr, which can
// allocate, from inside the allocator.
struct alignas(64) ThreadCapture {
  AllocStackStats stats;
  uintptr_t tp;        // the thread pointer; 0 until the first sample
  uintptr_t main_top;  // __libc_stack_end
  uintptr_t trusted_end;
};
thread_local ThreadCapture t_capture __attribute__((tls_model("initial-exec"))) = {};

// The upper end of the calling thread's stack, 0 if unknown. glibc puts a
// thread's descriptor (the thread pointer) at the top of the mapping its
// stack grows down in, so [sp, tp) is mapped; the initial thread's stack is
// a separate mapping that ends above __libc_stack_end. A stack that is
// neither (a fiber's, a signal stack) is left to libunwind.
uintptr_t StackTop(uintptr_t sp) {
  constexpr uintptr_t kMaxStack = uintptr_t{1} << 30;
  ThreadCapture& t = t_capture;
  if (t.tp == 0) {
#if defined(__x86_64__)
    asm("mov %%fs:0, %0" : "=r"(t.tp));
#else
    t.tp = 1;  // no thread pointer to compare with: sp is never below 1
#endif
    t.main_top = reinterpret_cast<uintptr_t>(__libc_stack_end);
  }
  if (sp < t.tp && t.tp - sp < kMaxStack) return t.tp;
  if (sp < t.main_top && t.main_top - sp < kMaxStack) return t.main_top;
  return 0;
}

// Frames whose unwind rule a heap sample looks up: the hook's and the
// allocator's (3, built with frame pointers: cache hits) and the three above
// them, where a frameless caller of malloc would make the chain skip its
// caller. Each is a load of a line the program may have evicted.
constexpr size_t kLookups = 6;

// Verdicts on return addresses where frame-pointer walks ended on a broken
// link. Open addressing over atomics: lock-free, insert-only, never
// allocates; a full table sends undecided walks to libunwind.
// A verdict sits beside its address: a sample reads one line of the table,
// not one in each of two arrays.
constexpr size_t kEnds = 1024;
constexpr uint8_t kUnknown = 0, kTrusted = 1, kUnwind = 2;
struct EndEntry {
  std::atomic<uintptr_t> pc;
  std::atomic<uint8_t> verdict;
};
EndEntry g_end[kEnds];

size_t EndSlot(uintptr_t pc, bool insert) {
  size_t i = static_cast<size_t>((pc * 0x9e3779b97f4a7c15ULL) >> 54) & (kEnds - 1);
  for (size_t probe = 0; probe < 16; ++probe, i = (i + 1) & (kEnds - 1)) {
    uintptr_t k = g_end[i].pc.load(std::memory_order_acquire);
    if (k == pc) return i;
    if (k == 0) {
      if (!insert) return kEnds;
      if (g_end[i].pc.compare_exchange_strong(k, pc, std::memory_order_acq_rel) || k == pc) return i;
    }
  }
  return kEnds;
}

// Frames libunwind may find below the last frame-pointer frame of a complete
// stack: __libc_start_call_main, __libc_start_main, _start on the initial
// thread; start_thread, clone3 (and libstdc++'s thread trampoline) on others.
constexpr size_t kStartFrames = 3;

// The frame-pointer walk with its first kLookups steps checked. A step from
// a return address reads the record the frame pointer points to, which is
// the caller's record only if the function returned into keeps the standard
// frame there (CFA = rbp + 16, rbp saved at CFA - 16). The rule cache
// answers that with one load and one compare (UnwindTables::
// CachedStandardFrame); the first frame it cannot vouch for (not looked up
// yet, frameless, no rule) hands the walk to the rules from that frame on
// (UnwindStack, which also fills the cache). A warm walk through
// frame-pointer code thus costs the chain plus a probe per checked frame,
// and a frameless caller of malloc still does not hide its own caller.
// (The walk used to take UnwindStack from the start: 800 instructions per
// warm sample instead of 455.)
// fp: CaptureAllocationStack's own frame record, on the thread's stack
// below hi; max > 0.
size_t Walk(uintptr_t fp, uintptr_t hi, uintptr_t* out, size_t max, UnwindEnd* end) {
  // One step of the chain: the record at fp, above the last and inside the
  // stack, gives the next return address and frame.
#define LIBDUMP_CHAIN_STEP                                                                      \
  if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)) != 0) {     \
    *end = UnwindEnd::kBroken;                                                                  \
    return n;                                                                                   \
  }                                                                                             \
  const uintptr_t next = reinterpret_cast<const uintptr_t*>(fp)[0];                             \
  const uintptr_t ret = reinterpret_cast<const uintptr_t*>(fp)[1];                              \
  if (ret < 4096) { /* not a return address: a record that was never one */                    \
    *end = UnwindEnd::kBroken;                                                                  \
    return n;                                                                                   \
  }                                                                                             \
  out[n++] = ret;                                                                               \
  if (next == 0) { /* the thread's first frame: glibc starts threads with fp 0 */               \
    *end = UnwindEnd::kOutermost;                                                               \
    return n;                                                                                   \
  }
  size_t n = 0;
  uintptr_t lo = fp;
  *end = UnwindEnd::kFull;
  // out[0] returns into CaptureAllocationStack's caller (a profiler's hook in
  // libdump_samplers, built with frame pointers): its step is not checked.
  {
    LIBDUMP_CHAIN_STEP
    lo = fp + 2 * sizeof(uintptr_t);
    fp = next;
  }
  const size_t checked = max < kLookups ? max : kLookups;
  while (n < checked) {
    LIBDUMP_CHAIN_STEP
    if (!UnwindTables::CachedStandardFrame(ret - 1)) {
      // Rules from the function ret returns into, at its call (sp just
      // above the record, its callee's CFA; rbp what the callee saved) for
      // the rest of the checked frames, then the chain.
      const UnwindPolicy policy{kLookups - (n - 1), false};
      StackReader reader(fp + 2 * sizeof(uintptr_t));
      return n + UnwindStack(ret, fp + 2 * sizeof(uintptr_t), next, false, policy, reader, out + n, max - n, end);
    }
    lo = fp + 2 * sizeof(uintptr_t);
    fp = next;
  }
  while (n < max) {
    LIBDUMP_CHAIN_STEP
    lo = fp + 2 * sizeof(uintptr_t);
    fp = next;
  }
#undef LIBDUMP_CHAIN_STEP
  return n;
}

}  // namespace

__attribute__((noinline)) size_t CaptureAllocationStack(uintptr_t* out, size_t max) {
  const uintptr_t fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t hi = StackTop(fp);
  size_t n = 0;
  UnwindEnd end = UnwindEnd::kBroken;
  size_t slot = kEnds;
  if (hi != 0 && max > 0) {
    // From this function's own frame record: out[0] returns into the hook.
    n = Walk(fp, hi, out, max, &end);
    if (end != UnwindEnd::kBroken) {
      ++t_capture.stats.frame_pointer;
      return n;
    }
    if (n > 0) {
      // The initial thread's walks all end at _start.
      if (out[n - 1] == t_capture.trusted_end) {
        ++t_capture.stats.frame_pointer;
        return n;
      }
      slot = EndSlot(out[n - 1], false);
      if (slot != kEnds) {
        const uint8_t v = g_end[slot].verdict.load(std::memory_order_acquire);
        if (v == kTrusted) {
          t_capture.trusted_end = out[n - 1];
          ++t_capture.stats.frame_pointer;
          return n;
        }
      }
    }
  }
  // libunwind's first entry is the return address into this function.
  uintptr_t u[kMaxFrames + 1];
  int got = 0;
  // No libunwind in a forked child, where a thread the child lacks may have
  // held libunwind's locks, nor while this thread forks (capture/
  // loader_fork.h): the walk's frames stand, cut where the walk broke.
  if (!capture::UnwinderUsable()) {
    ++t_capture.stats.frame_pointer;
    return n > 0 ? n : CaptureCurrentStack(out, max, 0);
  }
  got = unw_backtrace(reinterpret_cast<void**>(u), static_cast<int>(kMaxFrames + 1));
  const size_t un = got > 1 ? static_cast<size_t>(got) - 1 : 0;
  if (hi != 0 && n > 0) {
    uint8_t verdict = un >= n && un - n <= kStartFrames ? kTrusted : kUnwind;
    for (size_t i = 0; i < n && verdict == kTrusted; ++i) {
      if (u[i + 1] != out[i]) verdict = kUnwind;
    }
    if (slot == kEnds) slot = EndSlot(out[n - 1], true);
    if (slot != kEnds) g_end[slot].verdict.store(verdict, std::memory_order_release);
    if (verdict == kTrusted) {
      // The frame-pointer stack, so later samples of this stack (which will
      // take the fast path) land in the same bucket.
      ++t_capture.stats.frame_pointer;
      return n;
    }
  }
  ++t_capture.stats.unwound;
  if (un == 0) return CaptureCurrentStack(out, max, 0);
  const size_t w = un < max ? un : max;
  for (size_t i = 0; i < w; ++i) out[i] = u[i + 1];
  return w;
}

void WarmStackCapture() {
  capture::InstallLoaderFork();
  void* pcs[kMaxFrames];
  if (capture::UnwinderUsable()) unw_backtrace(pcs, static_cast<int>(kMaxFrames));
}

AllocStackStats GetAllocStackStats() { return t_capture.stats; }

}  // namespace libdump::samplers
