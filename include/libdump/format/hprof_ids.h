// Which dumps an hprof conversion can represent. A dump's object addresses
// become hprof object ids as they are, 0 being hprof's null, and the ids of
// everything else the conversion writes (classes, strings, threads, frames)
// are counted up from just above the highest object. So every object must lie
// at a nonzero address and end at or below kMaxHprofObjectEnd. dumptohprof
// refuses a dump that breaks this; readdump --validate reports it: one rule.
#pragma once

#include <cstdint>
#include <string>

namespace libdump::format::hprof {

constexpr uint64_t kMaxHprofObjectEnd = uint64_t{1} << 62;

// Why an object at addr of size bytes has no hprof id, or "" if it has one.
inline std::string HprofIdProblem(uint64_t addr, uint64_t size) {
  if (addr == 0) return "object at address 0 (hprof's null id)";
  if (addr > kMaxHprofObjectEnd || size > kMaxHprofObjectEnd - addr) {
    return "object addresses above 2^62 leave no room for hprof ids";
  }
  return {};
}

}  // namespace libdump::format::hprof
