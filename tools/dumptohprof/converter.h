// dump -> hprof in two passes over the dump file: pass 1 builds the catalog
// (types, threads, the address index) and finds where the dump can be split,
// pass 2 streams objects and roots into the heap dump, on several threads
// when the dump is uncompressed (parallel_pass.h). Everything before the heap (names, classes, frames,
// traces, threads) is written between the passes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "go_types.h"
#include "go_typing.h"
#include "libdump/format/hprof_writer.h"
#include "libdump/format/reader.h"

namespace libdump::dumptohprof {

// Classes the typing pass (tools/typing, docs/TYPING.md) gave objects the
// dump leaves untyped: names[k] for k >= 1, and (address, k) for each such
// object. Such an object becomes an object array of its class, one slot per
// word (readers show "NAME[]"); objects without pointers are better left out
// (they stay byte[], whose bytes readers show).
struct NamedObjects {
  std::vector<std::string> names{""};
  std::vector<std::pair<uint64_t, uint32_t>> of_address;
};

struct ConvertOptions {
  bool redact = false;  // zero every byte that is not a pointer
  uint64_t max_segment = uint64_t{1} << 30;
  uint64_t timestamp_ms = 0;
  // Threads converting pass 2's chunks side by side (0: one per core but the
  // one that writes, at most 4, so none on 2 cores; 1: the calling thread
  // alone). The output is the same whatever the number.
  unsigned threads = 0;
  // Bytes of dump per chunk of pass 2 (tests use small ones).
  uint64_t chunk_bytes = uint64_t{1} << 20;
  // The dump readers' and the hprof writer's buffers. The fuzz harnesses use
  // small ones: a 1 MiB buffer cleared for each of a million tiny inputs was
  // most of a conversion's cost, and small buffers refill and drain more often.
  format::ReaderOptions reader;
  size_t writer_buffer = size_t{1} << 20;
  // --binary: the Go program that wrote the dump, whose DWARF types its objects (go_typing.h).
  const godwarf::GoProgram* program = nullptr;
  // The typing pass's classes (ignored with `program`).
  const NamedObjects* named = nullptr;
  // Called now and then with the pass (1 or 2) and the decompressed offset.
  std::function<void(int pass, uint64_t offset)> progress;
  // libdump's own memory (docs/FORMAT.md, typeinfo flag 8) converted too,
  // as instances of its components' classes; left out by default.
  bool include_own = false;
};

struct ConvertStats {
  uint64_t objects = 0;
  uint64_t instances = 0;
  uint64_t object_arrays = 0;
  uint64_t primitive_arrays = 0;
  uint64_t truncated_arrays = 0;  // longer than an hprof record can hold
  uint64_t classes = 0;
  uint64_t threads = 0;
  uint64_t frames = 0;
  uint64_t roots = 0;             // hprof roots written
  uint64_t unresolved_roots = 0;  // dump roots pointing at no dumped object: dropped
  uint64_t own_objects = 0;       // libdump's own memory, left out unless include_own
  uint64_t own_bytes = 0;
  uint64_t finalizers = 0;
  uint64_t alloc_stacks = 0;      // objects written with their allocation stack as stack trace
  uint64_t dump_bytes = 0;        // decompressed
  uint64_t hprof_bytes = 0;
  uint64_t segments = 0;
  uint64_t index_bytes = 0;
  bool go_typed = false;  // --binary
  GoTypingStats go;
  // (dump type id, class name as readers show it) -> objects
  std::map<std::pair<uint64_t, std::string>, uint64_t> classes_by_type;
};

// Throws format::FormatError for a bad dump, std::system_error for I/O,
// BinaryMismatch when options.program did not write the dump.
ConvertStats Convert(const std::string& dump_path, format::hprof::Output& out, const ConvertOptions& options);

// One line per (dump type, hprof class): "TYPEID<TAB>CLASS<TAB>COUNT".
void WriteClassMap(std::ostream& out, const ConvertStats& stats);

}  // namespace libdump::dumptohprof
