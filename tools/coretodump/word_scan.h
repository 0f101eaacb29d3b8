// Conservative root scanning of another process's memory: every aligned word
// of a range that points into a live block, read through the image in
// bounded chunks (a stack or a mapping of any size costs 64 KiB).
#pragma once

#include <cstdint>
#include <functional>

#include "block_index.h"
#include "process_image.h"

namespace libdump::coretodump {

// Calls emit(address of the word, its value) for each aligned word in
// [lo, hi) that points into a block of `blocks`, except the words inside
// blocks: the kernel merges neighbouring anonymous mappings, so a thread's
// TLS or a .bss tail may share its mapping with an mmapped chunk, whose
// contents are the heap's edges, not roots. Words the image lacks are
// skipped. Returns the bytes it could not read.
uint64_t ScanWords(const procimage::ProcessImage& image, const BlockIndex& blocks, uint64_t lo, uint64_t hi,
                   const std::function<void(uint64_t, uint64_t)>& emit);

}  // namespace libdump::coretodump
