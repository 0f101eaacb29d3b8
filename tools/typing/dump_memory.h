// What the DWARF walk reads a typed object's fields from: the bytes the
// dump holds, an object's payload or a root's words (cxx_expand.h's
// MemoryReader).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <span>

#include "cxx_expand.h"

namespace libdump::typing {

// An object's payload.
class SpanMemory : public MemoryReader {
 public:
  SpanMemory(uint64_t base, std::span<const uint8_t> data) : base_(base), data_(data) {}
  bool Read(uint64_t addr, void* out, size_t n) const override {
    if (addr < base_ || addr - base_ > data_.size() || data_.size() - (addr - base_) < n) return false;
    std::memcpy(out, data_.data() + (addr - base_), n);
    return true;
  }

 private:
  uint64_t base_;
  std::span<const uint8_t> data_;
};

// The words of a global or a local the dump has: its roots (the words that
// point into the heap); the rest of its bytes are not in the dump.
class RootMemory : public MemoryReader {
 public:
  void Add(uint64_t addr, uint64_t value) { words_.try_emplace(addr, value); }
  bool Read(uint64_t addr, void* out, size_t n) const override {
    auto it = words_.find(addr);
    if (it == words_.end() || n > 8) return false;
    std::memcpy(out, &it->second, n);
    return true;
  }

 private:
  std::map<uint64_t, uint64_t> words_;
};

}  // namespace libdump::typing
