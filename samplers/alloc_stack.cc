#include "alloc_stack.h"

#include <libunwind.h>

#include <atomic>

#include "loader_gate.h"
#include "dwarf_unwind.h"
#include "stack_walk.h"

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

}  // namespace

__attribute__((noinline)) size_t CaptureAllocationStack(uintptr_t* out, size_t max) {
  const uintptr_t fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t hi = StackTop(fp);
  size_t n = 0;
  UnwindEnd end = UnwindEnd::kBroken;
  size_t slot = kEnds;
  if (hi != 0 && max > 0) {
    // This function's own frame record, then the callers by their rules for
    // the first kLookups frames (the hook's, the allocator's, and the
    // allocator's callers, which may be frameless: strdup, a function built
    // with -fomit-frame-pointer), then by the chain.
    const uintptr_t* rec = reinterpret_cast<const uintptr_t*>(fp);
    out[0] = rec[1];
    StackReader reader(fp);
    static constexpr UnwindPolicy kAllocPolicy{kLookups, false};
    n = 1 + UnwindStack(rec[1], fp + 2 * sizeof(uintptr_t), rec[0], false, kAllocPolicy, reader, out + 1, max - 1,
                        &end);
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
  int got;
  {
    // A fork waits for it: libunwind's and the loader's locks stay free.
    capture::LoaderSection section;
    got = unw_backtrace(reinterpret_cast<void**>(u), static_cast<int>(kMaxFrames + 1));
  }
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
  capture::InstallLoaderGate();
  void* pcs[kMaxFrames];
  capture::LoaderSection section;
  unw_backtrace(pcs, static_cast<int>(kMaxFrames));
}

AllocStackStats GetAllocStackStats() { return t_capture.stats; }

}  // namespace libdump::samplers
