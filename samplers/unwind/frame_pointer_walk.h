// Frame-pointer stack walks that are safe in a signal handler and inside the
// allocator: no allocation, no locks, and no load from memory that has not
// been shown to be mapped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::samplers {

inline constexpr size_t kMaxFrames = 64;

// Walks the frame-pointer chain starting at frame pointer fp, writing return
// addresses to out. sp bounds the walk from below (frames live above the
// stack pointer). Returns how many were written.
size_t WalkFramePointers(uintptr_t fp, uintptr_t sp, uintptr_t* out, size_t max);

// Return addresses of the current stack: out[0] returns into the function
// that called CaptureCurrentStack (like backtrace()); skip drops that many
// innermost entries.
size_t CaptureCurrentStack(uintptr_t* out, size_t max, size_t skip);

// Signal context: the interrupted pc first (made to look like a return
// address, +1, so every entry is symbolized the same way), then its callers:
// the innermost frames by their unwind rules (dwarf_unwind.h: frameless code
// such as libc's routines and the vDSO is unwound right), then frame
// pointers. Async-signal-safe once UnwindTables::Refresh has run (before
// that, frame pointers only).
size_t CaptureSignalStack(const void* ucontext, uintptr_t* out, size_t max);

}  // namespace libdump::samplers
