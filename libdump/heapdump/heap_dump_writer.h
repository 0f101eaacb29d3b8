// Writes a complete heap dump of this process: the one place that knows the
// order of the records (docs/FORMAT.md), like Go's runtime/heapdump.go.
#pragma once

#include <cstdint>

#include "heap_source.h"

namespace libdump::heapdump {

struct DumpOptions {
  bool zstd = false;
  int zstd_level = 1;
  bool seed_only = false;      // no extension records
  bool fork_snapshot = false;  // stop, capture, fork: the child writes, the parent resumes at once
  int stop_timeout_ms = 2000;  // how long to wait for a thread to stop
  int threads = 1;             // compressing processes: 1 compresses on the writing thread
};

struct DumpResult {
  int error = 0;            // 0, or the errno of the failure (EPIPE, ENOSPC, EBADF, ...)
  uint64_t pause_ns = 0;    // how long the other threads were stopped
  uint64_t objects = 0;     // object records written (0 in the parent of a fork snapshot)
  uint64_t object_bytes = 0;
  uint64_t threads = 0;
  uint64_t unresponsive_threads = 0;  // threads that did not stop in time: their stacks are not scanned
  bool fork_failed = false;  // a fork snapshot was asked for and written with the world stopped instead
};

// Dumps `heap` and the process's threads, frames and roots to fd. Every other
// thread is stopped while memory is read and resumes afterwards, whether
// writing succeeded or not. Safe to call from any thread; dumps are serialised.
DumpResult WriteHeapDump(HeapSource& heap, int fd, const DumpOptions& options);

}  // namespace libdump::heapdump
