#include "libdump/format/format_error.h"

namespace libdump::format {

FormatError::FormatError(uint64_t offset, std::string context, std::string reason)
    : std::runtime_error(std::to_string(offset) + ": " + context + ": " + reason),
      offset_(offset), context_(std::move(context)), reason_(std::move(reason)) {}

}  // namespace libdump::format
