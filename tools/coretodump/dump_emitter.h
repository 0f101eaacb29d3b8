// Writes a process image and its heap walk as a libdump dump
// (docs/FORMAT.md), in the order the runtime writes its own
// (libdump/heapdump/heap_dump_writer.cc), so that readdump, the typing pass,
// heapview and dumptohprof read it as they read the runtime's: header,
// params, memstats, modules, objects, polymorphic classes, threads with their
// frames and stack roots, data roots, other roots, eof (docs/COREDUMP.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heap_walker.h"
#include "libdump/format/writer.h"
#include "process_image.h"
#include "thread_unwinder.h"

namespace libdump::coretodump {

struct EmitOptions {
  UnwinderOptions unwind;
  size_t buffer_size = 1 << 20;  // object payloads are copied through this many bytes
};

struct EmitResult {
  uint64_t objects = 0, object_bytes = 0;
  uint64_t damaged_objects = 0;  // blocks some of whose bytes the image lacks
  uint64_t missing_bytes = 0;    // of those blocks, written as zeros
  uint64_t polymorphic_classes = 0, polymorphic_objects = 0;
  uint64_t threads = 0, frames = 0;
  uint64_t stack_roots = 0, data_roots = 0, other_roots = 0;
  // One line each, at most kMaxDamageLines (the counts above are complete).
  std::vector<std::string> damage;
  static constexpr size_t kMaxDamageLines = 20;
};

EmitResult EmitDump(const procimage::ProcessImage& image, const heapwalk::HeapWalk& walk, format::Writer& w,
                    const EmitOptions& options);

}  // namespace libdump::coretodump
