// Heap dumps that the process starts by itself (a signal, a failed
// allocation) go to a file named by a pattern: LIBDUMP_HEAPDUMP_PATH.
#pragma once

#include <string>

#include "libdump/heap_dump.h"

namespace libdump::heapdump {

constexpr const char* kDefaultDumpPath = "heap.%p.%t.dump";

// output::ExpandPath of pattern (%p pid, %t time), of kDefaultDumpPath if empty.
std::string ExpandDumpPath(const char* pattern);

// Dumps into PATH.partial (mode 0600), renames it to PATH when complete or
// removes it, and reports on stderr: `libdump: heap dump WHY written to PATH`
// or why not. `why` says what started it ("on signal SIGUSR2", "on out of
// memory ..."). Returns WriteHeapDump's result, or the errno of the file
// operation that failed.
int DumpToPath(const char* pattern, const HeapDumpOptions& options, const char* why);

}  // namespace libdump::heapdump
