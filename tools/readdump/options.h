// readdump's command line.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "typing.h"

namespace libdump::readdump {

struct Options {
  std::string file;
  bool summary = false;
  bool records = false;
  bool histogram = false;
  bool raw_types = false;  // --raw-types: the histogram of the dump's own types, not the typed classes
  uint64_t top = 0;  // 0: every type
  bool threads = false;
  bool validate = false;
  bool json = false;
  // Analysis verbs (tools/heapgraph): FILE may also be an hprof.
  bool dominators = false;
  bool flame = false;          // --dominators --flame: folded stacks of retained bytes by dominator path
  std::string output = "-";    // -o FILE: where --flame writes
  bool force = false;          // replace an existing -o FILE
  std::string path_to_root;  // object address or id
  std::string diff_old;      // --diff OLD NEW: FILE is NEW
  bool symbolize = false;    // --symbolize: FILE is a flight recorder trace (symbolize.h)
  // --growth OLD... NEW: `series` holds OLD..., FILE is NEW.
  bool growth = false;
  std::vector<std::string> series;
  uint64_t max_growth = 0;  // --max-growth BYTES: exit 3 when a class grew more
  bool has_max_growth = false;
  // The analysis verbs' index cache (tools/heapgraph/index_cache.h).
  std::string index_dir;
  bool no_index_cache = false;
  bool include_own = false;  // --include-own: libdump's own memory in every view, one class per component
  std::string memory;  // --memory SIZE for the analysis verbs (empty: a quarter of physical memory)
  bool classes = false;      // the typed histogram (classes the typing pass named, with the rule)
  bool leaks = false;        // unreachable objects by class, and the largest unreachable clusters
  typing::Options typing;    // --binary, --debug-dir, --no-typing
  bool Analysis() const { return dominators || classes || leaks || !path_to_root.empty() || !diff_old.empty() || growth; }
};

enum class ParseResult { kRun, kHelp, kUsageError };

// Fills `options`, or writes the help text to `out` (kHelp) or an error to
// `err` (kUsageError).
ParseResult ParseOptions(int argc, const char* const* argv, Options& options, std::ostream& out,
                         std::ostream& err);

}  // namespace libdump::readdump
