// readdump --symbolize TRACE: names the frames a flight recorder trace left
// as hex return addresses (a crash snapshot's frames in modules without a
// symbol table, or written before the tables were ready), from the
// process's mappings the trace carries (otherData.maps) and the binaries'
// ELF symbol tables and DWARF (elfutils libdwfl: separate debug files by
// build id or debuglink too), with file:line where DWARF has it. The trace
// goes to standard output unchanged but for those strings.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

namespace libdump::readdump {

struct Options;

// The verb: reads o.file ('-': standard input), writes the trace to
// standard output and one line of counts to standard error. 0, or 1 when
// the input cannot be read or is not a trace with maps.
int RunSymbolize(const Options& o);

// The pieces, for the tests. `maps` is /proc/PID/maps text; each hex string
// of a "stack" array of `trace` is replaced by what name(pc) returns, when it
// returns something.
struct SymbolizeCounts {
  size_t hex = 0;    // hex frames found
  size_t named = 0;  // of which named
};
class OfflineSymbolizer {
 public:
  explicit OfflineSymbolizer(std::string_view maps);
  ~OfflineSymbolizer();
  OfflineSymbolizer(const OfflineSymbolizer&) = delete;
  OfflineSymbolizer& operator=(const OfflineSymbolizer&) = delete;
  // "function (file:line)", "function", or "" for a return address pc.
  std::string Name(uint64_t pc);

 private:
  struct Impl;
  Impl* impl_;
};
// The string value of "maps" in the trace's text, unescaped; "" if none.
std::string TraceMaps(std::string_view trace);
std::string RewriteStacks(std::string_view trace, OfflineSymbolizer& names, SymbolizeCounts* counts);

}  // namespace libdump::readdump
