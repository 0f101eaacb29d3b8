// readdump's command line.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

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
};

enum class ParseResult { kRun, kHelp, kUsageError };

// Fills `options`, or writes the help text to `out` (kHelp) or an error to
// `err` (kUsageError).
ParseResult ParseOptions(int argc, const char* const* argv, Options& options, std::ostream& out,
                         std::ostream& err);

}  // namespace libdump::readdump
