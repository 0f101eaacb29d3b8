#include "samplers/unwind/frame_pointer_walk.h"

#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "samplers/unwind/dwarf_unwind.h"

namespace libdump::samplers {

namespace {

constexpr uintptr_t kPage = 4096;
// Frames whose unwind rule a CPU sample looks up. Not only up to the first
// frame-pointer frame: the vDSO keeps a frame pointer, and its caller, libc's
// clock_gettime, does not; a standard frame's record names its caller only if
// that caller keeps rbp as its own frame base.
constexpr size_t kSignalLookups = 8;
// A frame larger than this is taken as a corrupt chain (code built without
// frame pointers uses rbp as a general register).
constexpr uintptr_t kMaxFrameSize = uintptr_t{1} << 20;

// Reads the two words of a frame record. The first read in each page goes
// through process_vm_readv, which fails with EFAULT instead of faulting, so a
// garbage frame pointer ends the walk instead of the process. Later reads in
// a page already proven mapped are plain loads: a walk costs a syscall or two,
// not one per frame.
bool ReadFrame(pid_t self, uintptr_t fp, uintptr_t* verified_page, uintptr_t words[2]) {
  const uintptr_t first = fp & ~(kPage - 1);
  const uintptr_t last = (fp + 2 * sizeof(uintptr_t) - 1) & ~(kPage - 1);
  if (first == *verified_page && last == first) {
    const uintptr_t* p = reinterpret_cast<const uintptr_t*>(fp);
    words[0] = p[0];
    words[1] = p[1];
    return true;
  }
  iovec local{words, 2 * sizeof(uintptr_t)};
  iovec remote{reinterpret_cast<void*>(fp), 2 * sizeof(uintptr_t)};
  if (process_vm_readv(self, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(2 * sizeof(uintptr_t))) {
    return false;
  }
  *verified_page = last;
  return true;
}

}  // namespace

size_t WalkFramePointers(uintptr_t fp, uintptr_t sp, uintptr_t* out, size_t max) {
  size_t n = 0;
  uintptr_t verified_page = ~uintptr_t{0};  // none yet (0 is a page too)
  uintptr_t prev = sp;
  pid_t self = 0;  // looked up at the first syscall read, not cached: fork changes it
  while (n < max) {
    // Caller frames sit at strictly higher, aligned addresses, not far away.
    if (fp == 0 || (fp & (sizeof(uintptr_t) - 1)) != 0 || fp < prev || fp - prev > kMaxFrameSize) break;
    uintptr_t words[2];
    if (self == 0 && (fp & ~(kPage - 1)) != verified_page) self = getpid();
    if (!ReadFrame(self, fp, &verified_page, words)) break;
    const uintptr_t ret = words[1];
    if (ret < kPage) break;  // thread start: glibc zeroes the outermost frame
    out[n++] = ret;
    prev = fp + 2 * sizeof(uintptr_t);
    fp = words[0];
  }
  return n;
}

__attribute__((noinline)) size_t CaptureCurrentStack(uintptr_t* out, size_t max, size_t skip) {
  uintptr_t buf[kMaxFrames + 8];
  const uintptr_t fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const size_t want = max + skip < kMaxFrames + 8 ? max + skip : kMaxFrames + 8;
  // fp itself is in this frame, so sp bounds are taken just below it.
  const size_t n = WalkFramePointers(fp, fp - 1, buf, want);
  size_t w = 0;
  for (size_t i = skip; i < n && w < max; ++i) out[w++] = buf[i];
  return w;
}

size_t CaptureSignalStack(const void* ucontext, uintptr_t* out, size_t max) {
  if (max == 0) return 0;
  const mcontext_t& mc = static_cast<const ucontext_t*>(ucontext)->uc_mcontext;
#if defined(__x86_64__)
  const uintptr_t pc = static_cast<uintptr_t>(mc.gregs[REG_RIP]);
  const uintptr_t fp = static_cast<uintptr_t>(mc.gregs[REG_RBP]);
  const uintptr_t sp = static_cast<uintptr_t>(mc.gregs[REG_RSP]);
#elif defined(__aarch64__)
  const uintptr_t pc = static_cast<uintptr_t>(mc.pc);
  const uintptr_t fp = static_cast<uintptr_t>(mc.regs[29]);
  const uintptr_t sp = static_cast<uintptr_t>(mc.sp);
#else
#error "CaptureSignalStack: unsupported architecture"
#endif
  out[0] = pc + 1;
#if defined(__x86_64__)
  // The interrupted function and its frameless callers by their unwind
  // rules, then the frame-pointer chain from the first standard frame.
  StackReader reader(sp);
  static constexpr UnwindPolicy kSignalPolicy{kSignalLookups, false};
  return 1 + UnwindStack(pc, sp, fp, true, kSignalPolicy, reader, out + 1, max - 1);
#else
  return 1 + WalkFramePointers(fp, sp, out + 1, max - 1);
#endif
}

}  // namespace libdump::samplers
