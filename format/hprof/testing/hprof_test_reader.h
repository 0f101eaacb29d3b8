// A minimal hprof parser for the tests: splits a file into top-level records
// and heap segments into sub-records, failing on any malformed length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace libdump::format::hprof::testing {

struct Rec {
  uint8_t tag = 0;
  uint64_t offset = 0;  // of the tag byte
  std::string body;
};

// Throws std::runtime_error on a bad header or a truncated record.
std::vector<Rec> TopRecords(const std::string& file, uint64_t* timestamp = nullptr);
// Sub-records of one segment body; throws if one overruns it.
std::vector<Rec> SubRecords(const std::string& segment);

uint64_t Be(const std::string& s, size_t at, size_t n);

}  // namespace libdump::format::hprof::testing
