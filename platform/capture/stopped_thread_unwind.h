// Unwinds the stack of a stopped thread from its captured registers with
// libunwind, without calling into the dynamic loader or libunwind's caches.
//
// libunwind's local unwinder finds unwind tables through dl_iterate_phdr,
// whose lock a stopped thread may hold. This one uses libunwind's remote
// interface over our own address space: unwind tables come from the module
// list captured before the stop, memory reads are checked against the memory
// map, registers come from the captured context.
#pragma once

#include <sys/ucontext.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "platform/capture/memory_map.h"
#include "platform/capture/modules.h"

namespace libdump::capture {

struct UnwoundFrame {
  uint64_t sp = 0;
  uint64_t pc = 0;     // exact for the top frame, a return address above it
  uint64_t entry = 0;  // start of the function, 0 if unknown
};

// Opens libunwind's remote library if it is not open yet: a dlopen, so not
// while the module list is held (loader_lock.h). StackUnwinder does it too.
void OpenUnwindLibrary();

class StackUnwinder {
 public:
  // Build it before stopping the world (it allocates, and the first one opens
  // libunwind; without libunwind it unwinds nothing); `modules` and `memory`
  // must outlive it. `memory` may be re-read while stopped.
  StackUnwinder(const std::vector<Module>& modules, const MemoryMap& memory);
  ~StackUnwinder();
  StackUnwinder(const StackUnwinder&) = delete;
  StackUnwinder& operator=(const StackUnwinder&) = delete;

  // Writes at most max frames, top first; returns how many. Allocation-free.
  size_t Unwind(const greg_t* regs, UnwoundFrame* out, size_t max);

  struct Impl;

 private:
  Impl* impl_;
};

}  // namespace libdump::capture
