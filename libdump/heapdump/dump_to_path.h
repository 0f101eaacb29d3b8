// Heap dumps that the process starts by itself (a signal, a failed
// allocation) go to a file named by a pattern: LIBDUMP_HEAPDUMP_PATH.
#pragma once

#include <string>

#include "libdump/heap_dump.h"

namespace libdump::heapdump {

constexpr const char* kDefaultDumpPath = "heap.%p.%t.dump";

// "%p" -> pid, "%t" -> seconds since the epoch, "%%" -> "%".
std::string ExpandDumpPath(const char* pattern);

// Creates the file (mode 0600, never following an existing name's content:
// O_TRUNC of a file we own), dumps into it and reports on stderr, as
// `libdump: heap dump written to PATH` or why not. `why` starts the message
// ("on SIGUSR2", "on out of memory"). Returns WriteHeapDump's result, or the
// errno of open.
int DumpToPath(const char* pattern, const HeapDumpOptions& options, const char* why);

}  // namespace libdump::heapdump
