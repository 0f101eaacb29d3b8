// The threads the open of a heap may use for a phase that splits (the
// loaders' reference resolution, the id sort), and the one way such a phase
// runs its parts.
#pragma once

#include <functional>

namespace libdump::heapgraph {

// The most threads a phase uses: the machine's hardware threads, at most
// kMaxThreads; LIBDUMP_INDEX_THREADS=N sets it (1: everything on the calling
// thread, as a reference to compare with). SetThreads(n) overrides both
// (tests; 0 goes back to them).
inline constexpr unsigned kMaxThreads = 8;
unsigned Threads();
void SetThreads(unsigned n);

// Runs part(0) .. part(parts - 1), part 0 on the calling thread and each
// other on a thread of its own, and returns when all have; the first
// exception a part throws is rethrown here, after every part has ended.
void RunParallel(unsigned parts, const std::function<void(unsigned)>& part);

}  // namespace libdump::heapgraph
