// Stack capture for sampled allocations: runs inside the allocator, so it
// allocates nothing, takes no lock and makes no system call on its usual
// path.
//
// The first frames (the hook's, the allocator's and its callers') are
// checked against the unwind rules of dwarf_unwind.h: frame pointers where
// the rule cache knows the frame as a standard one, the rules from the first
// frame it does not, so that a frameless caller of malloc does not hide its
// own caller; the rest follow frame pointers.
//
// Frame pointers first: a walk bounded by the thread's own stack (from the
// current frame up to the thread pointer, or to __libc_stack_end on the main
// thread), with strictly increasing, aligned frame addresses. Such a walk
// cannot fault, but code built without frame pointers ends it early or makes
// it skip frames. Where a walk ends on a broken link (rather than on the
// outermost frame's zero), the return address it ended at is checked once
// against libunwind (DWARF CFI): if libunwind finds the same frames and then
// only thread-start frames, every later walk ending there is trusted;
// otherwise every walk ending there is redone with libunwind.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::samplers {

// Return addresses, innermost first: out[0] returns into the caller of
// CaptureAllocationStack.
size_t CaptureAllocationStack(uintptr_t* out, size_t max);

// Makes libunwind set up its per-process state now: its first call takes
// ~1 ms (3.5 M cycles measured), which would otherwise land in the first
// sampled allocation whose frame-pointer walk ends somewhere new.
void WarmStackCapture();

struct AllocStackStats {
  uint64_t frame_pointer;  // captures that used the frame-pointer walk
  uint64_t unwound;        // captures that used libunwind
};
// The calling thread's captures so far.
AllocStackStats GetAllocStackStats();

}  // namespace libdump::samplers
