// Heap dumps that the process starts by itself (a signal, a failed
// allocation) go to a file named by a pattern: LIBDUMP_HEAPDUMP_PATH.
#pragma once

#include <cstdint>
#include <string>

#include "libdump/heap_dump.h"

namespace libdump::heapdump {

// %p the pid, %t the time in seconds, %n the dump's sequence number: each
// dump of the process gets its own name, however many come in a second.
constexpr const char* kDefaultDumpPath = "heap.%p.%t.%n.dump";

// output::ExpandPath of pattern (%p pid, %t time, %n sequence), of
// kDefaultDumpPath if empty.
std::string ExpandDumpPath(const char* pattern, uint64_t sequence = 1);

// Takes the next sequence number (from 1; a forked child goes on from its
// parent's), dumps into PATH.partial (created exclusively, mode 0600) and
// renames it to PATH when complete, or removes it. An existing PATH is never
// replaced: the dump takes PATH.1, PATH.2, ... instead. Reports on stderr:
// `libdump: heap dump WHY written to PATH` or why not. `why` says what
// started it ("on signal SIGUSR2", "on out of memory ..."). Returns
// WriteHeapDump's result, or the errno of the file operation that failed.
int DumpToPath(const char* pattern, const HeapDumpOptions& options, const char* why);

}  // namespace libdump::heapdump
