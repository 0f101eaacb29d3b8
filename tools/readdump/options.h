// readdump's command line.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "typing.h"

namespace libdump::readdump {

struct Options {
  std::string file;
  bool summary = false;
  bool records = false;
  bool histogram = false;
  uint64_t top = 0;  // 0: every type
  bool threads = false;
  bool validate = false;
  bool json = false;
  // Analysis verbs (tools/heapgraph): FILE may also be an hprof.
  bool dominators = false;
  std::string path_to_root;  // object address or id
  std::string diff_old;      // --diff OLD NEW: FILE is NEW
  bool classes = false;      // the typed histogram (classes the typing pass named, with the rule)
  bool leaks = false;        // unreachable objects by class, and the largest unreachable clusters
  typing::Options typing;    // --binary, --debug-dir, --no-typing
  bool Analysis() const { return dominators || classes || leaks || !path_to_root.empty() || !diff_old.empty(); }
};

enum class ParseResult { kRun, kHelp, kUsageError };

// Fills `options`, or writes the help text to `out` (kHelp) or an error to
// `err` (kUsageError).
ParseResult ParseOptions(int argc, const char* const* argv, Options& options, std::ostream& out,
                         std::ostream& err);

}  // namespace libdump::readdump
