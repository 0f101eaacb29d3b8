// Where the DWARF of a module the dump names is (docs/TYPING.md, "DWARF"):
// a --binary FILE whose build-id is the module's, the module's own path
// (when its build-id matches and it has DWARF), DIR/.build-id/xx/yyyy.debug
// for each --debug-dir DIR, then /usr/lib/debug/.build-id/xx/yyyy.debug.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace libdump::typing {

struct DebugFile {
  std::string debug;    // the file with .debug_info ("" when none was found)
  std::string symbols;  // the module itself when found (its symbol table, headers)
  std::string why;      // when none: one line saying what was looked at
};

// The build-id of an ELF file as lower-case hex, "" when it has none or is
// not an ELF file.
std::string BuildIdOf(const std::string& path);

// A PT_LOAD program header.
struct LoadSegment {
  uint64_t offset, filesz, vaddr, memsz;
};
// The loadable segments of an ELF file (empty when it is not one).
std::vector<LoadSegment> LoadSegments(const std::string& path);

DebugFile FindDebugFile(const std::string& path, const std::string& build_id, const std::vector<std::string>& binaries,
                        const std::vector<std::string>& debug_dirs, const std::string& system_dir = "/usr/lib/debug");

}  // namespace libdump::typing
