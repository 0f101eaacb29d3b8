// Stack walks that unwind frameless code with the rules of unwind_table.h
// and take frame pointers where they are valid: safe in a signal handler and
// inside the allocator (no allocation, no lock, no load from memory that has
// not been shown to be mapped).
//
// Each frame's rule says how to reach its caller. The walk looks the rule up
// for the innermost frames (where a signal lands in a libc routine, the
// vDSO, an assembly leaf or a function built with -fomit-frame-pointer) and,
// once it reaches a function whose rule is the standard frame-pointer frame
// (CFA = rbp + 16, rbp saved at CFA - 16), follows the frame-pointer chain
// from there without further lookups: the chain is the fast path, the rules
// fix the frames it would get wrong. A pc without a rule (a module without
// .eh_frame, code without CFI, an expression) falls back to the chain too;
// such fallbacks are counted.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace libdump::samplers {

// Reads the current thread's stack. [lo, hi) is trusted: the thread's own
// stack above the stack pointer, which glibc maps whole (its descriptor, the
// thread pointer, sits at the top of the mapping; the initial thread's stack
// ends above __libc_stack_end). Anything else is proven mapped with
// process_vm_readv before it is read, once per page, so a garbage pointer
// ends a walk instead of the process.
class StackReader {
 public:
  explicit StackReader(uintptr_t sp);
  // Not instrumented by ASan: a walk reads stack words that belong to other
  // frames (a garbage frame pointer may point into a redzone), which is
  // what it is for; the bounds above are what keeps it safe.
  __attribute__((no_sanitize_address)) bool Read(uintptr_t addr, uintptr_t* out) {
    if (addr - lo_ < hi_ - lo_ && hi_ - addr >= sizeof(uintptr_t) && (addr & (sizeof(uintptr_t) - 1)) == 0) {
      *out = *reinterpret_cast<const uintptr_t*>(addr);
      return true;
    }
    return ReadSlow(addr, out);
  }
  uintptr_t trusted_hi() const { return hi_; }
  // A frame record (saved rbp, return address) at fp.
  __attribute__((no_sanitize_address)) bool ReadRecord(uintptr_t fp, uintptr_t* saved_fp, uintptr_t* ra) {
    if (fp - lo_ < hi_ - lo_ && hi_ - fp >= 2 * sizeof(uintptr_t) && (fp & (sizeof(uintptr_t) - 1)) == 0) {
      const uintptr_t* rec = reinterpret_cast<const uintptr_t*>(fp);
      *saved_fp = rec[0];
      *ra = rec[1];
      return true;
    }
    return ReadSlow(fp + sizeof(uintptr_t), ra) && ReadSlow(fp, saved_fp);
  }

 private:
  bool ReadSlow(uintptr_t addr, uintptr_t* out);
  uintptr_t lo_, hi_;
  uintptr_t verified_page_ = ~uintptr_t{0};
  pid_t self_ = 0;
};

struct UnwindPolicy {
  // At most this many frames get a rule lookup.
  size_t max_lookups;
  // Stop looking rules up at the first standard frame-pointer frame (the CPU
  // profiler: the chain from there is as good as the rules, and cheaper);
  // otherwise keep looking up until max_lookups (the heap profiler, whose
  // walk starts in the allocator's frame-pointer frames and whose frameless
  // frames are the allocator's callers).
  bool stop_at_standard_frame;
};

enum class UnwindEnd { kOutermost, kFull, kBroken };

// Walks from registers (pc, sp, fp). exact_pc: pc is the interrupted
// instruction (a signal frame), not a return address (whose rule is looked
// up at pc - 1, inside the call). Writes the callers' return addresses, not
// pc itself. Returns how many were written.
size_t UnwindStack(uintptr_t pc, uintptr_t sp, uintptr_t fp, bool exact_pc, const UnwindPolicy& policy,
                   StackReader& reader, uintptr_t* out, size_t max, UnwindEnd* end = nullptr);

struct DwarfUnwindStats {
  uint64_t dwarf_steps;     // the calling thread's frames unwound by a rule other than the standard frame
  uint64_t no_rule;         // frame-pointer fallbacks: pc in a known module, no FDE
  uint64_t unsupported;     // frame-pointer fallbacks: a rule the table cannot express
  uint64_t unknown_module;  // frame-pointer fallbacks: pc in no module of the table
};
// The fallbacks are process-wide totals (relaxed counters).
DwarfUnwindStats GetDwarfUnwindStats();

}  // namespace libdump::samplers
