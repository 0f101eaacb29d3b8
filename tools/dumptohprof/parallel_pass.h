// Pass 2 on several threads. Worker w converts chunks w, w + n, w + 2n, ...
// of the dump's chunk plan (ChunkPlan) into hprof fragments, with an
// ObjectWriter and a reader of its own; the calling thread appends the
// fragments to the file in dump order, so the file holds the bytes one thread
// would have written. Serial chunks are the caller's: `serial` converts them,
// on the calling thread, when their turn comes. Each worker has at most
// kFragmentSlots fragments, so memory is a few chunks' worth whatever the
// dump's size. The first error in dump order is thrown once every chunk
// before it is in the file; the workers are stopped and joined.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chunk_plan.h"
#include "libdump/format/hprof_writer.h"
#include "libdump/format/reader.h"
#include "object_writer.h"

namespace libdump::dumptohprof {

inline constexpr size_t kFragmentSlots = 2;

// Adds what the workers counted to `counts`. `progress` gets the offset after
// each chunk written.
void ParallelPass(const std::string& dump_path, const format::ReaderOptions& reader,
                  const std::vector<Chunk>& chunks, const HeapPlan& plan,
                  unsigned workers, format::hprof::Writer& file, const std::function<void(const Chunk&)>& serial,
                  const std::function<void(uint64_t offset)>& progress, ObjectCounts& counts);

}  // namespace libdump::dumptohprof
