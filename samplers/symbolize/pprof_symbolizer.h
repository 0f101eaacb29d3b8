// Turns raw return addresses into pprof locations, functions and mappings.
//
// Runs when a profile is written, never while sampling: it reads
// /proc/self/maps, loads the ELF symbol tables of the loaded modules (build
// ids from their NT_GNU_BUILD_ID notes), their DWARF line tables (file,
// line and inlined frames, where debug information allows) and demangles,
// all of which allocate.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "libdump/format/pprof_profile.h"

namespace libdump::capture {
struct Module;
class Symbolizer;
}  // namespace libdump::capture

namespace libdump::samplers {

class SourceLines;

class ProfileSymbolizer {
 public:
  explicit ProfileSymbolizer(pprof::ProfileBuilder& builder);
  ~ProfileSymbolizer();

  // pcs are return addresses (signal pcs already +1), innermost first. Each
  // is looked up at pc-1, inside the call instruction, so a call that ends a
  // function is not credited to the next one.
  std::vector<uint64_t> Locations(std::span<const uintptr_t> pcs);
  // Demangled name of the function containing return address pc, "" if unknown.
  std::string FunctionName(uintptr_t pc) const;

 private:
  struct Map {
    uint64_t start, end, offset;
    std::string path;
    uint64_t id = 0;  // builder mapping id once used
  };
  uint64_t MappingFor(uint64_t pc);

  pprof::ProfileBuilder& b_;
  std::vector<Map> maps_;
  std::unique_ptr<std::vector<capture::Module>> modules_;
  std::unique_ptr<capture::Symbolizer> symbols_;
  std::unique_ptr<SourceLines> lines_;
};

}  // namespace libdump::samplers
