// The live blocks of a heap walk, searched by any address inside them: a
// root or a register counts for the block it points into, interior pointers
// included, as heapgraph's FindContaining resolves them.
#pragma once

#include <cstdint>
#include <span>

#include "heap_walker.h"

namespace libdump::coretodump {

class BlockIndex {
 public:
  // blocks: in address order and disjoint (HeapWalk::blocks).
  explicit BlockIndex(std::span<const heapwalk::LiveBlock> blocks) : blocks_(blocks) {}

  // The block containing addr, or nullptr.
  const heapwalk::LiveBlock* Find(uint64_t addr) const;
  bool Contains(uint64_t addr) const { return Find(addr) != nullptr; }
  // True when some block starts in [start, end).
  bool AnyStartsIn(uint64_t start, uint64_t end) const;
  // The index of the first block ending after addr (blocks().size() if none).
  size_t FirstEndingAfter(uint64_t addr) const;
  std::span<const heapwalk::LiveBlock> blocks() const { return blocks_; }

 private:
  std::span<const heapwalk::LiveBlock> blocks_;
};

}  // namespace libdump::coretodump
