// Opening a dump file for the reader (which leaves the fd to its caller).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "libdump/format/reader.h"

namespace libdump::readdump {

// The file could not be opened; what() is "cannot open: REASON".
class OpenError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A reader that owns its fd. Throws OpenError, or FormatError for a bad header.
std::shared_ptr<format::Reader> OpenDump(const std::string& path);
// The same on a descriptor already open, which the reader takes over.
std::shared_ptr<format::Reader> OpenDumpFd(int fd);

// Whether path is a regular file, which --validate can read twice.
bool IsRegularFile(const std::string& path);

}  // namespace libdump::readdump
