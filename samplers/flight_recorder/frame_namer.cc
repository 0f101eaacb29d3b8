#include "samplers/flight_recorder/frame_namer.h"

namespace libdump::samplers::flight {

bool IsOwnFunction(std::string_view f) {
  // A template's demangled name starts with its return type: the
  // namespace is looked for before the parameter list.
  for (std::string_view ns : {"libdump::samplers::", "libdump::internal::"}) {
    const size_t at = f.find(ns);
    if (at != std::string_view::npos && at < f.find('(')) return true;
  }
  return f.starts_with("operator new") || f == "malloc" || f == "calloc" || f == "realloc" ||
         f.starts_with("libdump::Allocate");
}

// The crash handler's: the tables crash_symbols prepared at start, read

}  // namespace libdump::samplers::flight
