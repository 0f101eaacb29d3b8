// Keeps the unwind tables (unwind_table.h) current while the heap profiler
// reads them: a thread compares the loader's load and unload counters every
// 100 ms and rebuilds the tables after a dlopen or dlclose. The walks never
// rebuild them themselves: that takes the loader's lock and allocates, and
// a walk runs inside the allocator or a signal handler. (The CPU profiler's
// worker does the same check while a CPU profile runs.)
#pragma once

namespace libdump::samplers {

// Starts the thread, once per process (later calls return at once; a forked
// child, which has no copy of it, starts its own on its first call). Not
// async-signal-safe.
void WatchModulesForUnwindTables();

}  // namespace libdump::samplers
