// The one error of the dump readers.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace libdump::format {

// A malformed or unreadable dump. what() is "OFFSET: kind K: reason" (or
// "OFFSET: header: reason"); tools prefix the file name.
class FormatError : public std::runtime_error {
 public:
  FormatError(uint64_t offset, std::string context, std::string reason);
  uint64_t offset() const { return offset_; }
  const std::string& context() const { return context_; }
  const std::string& reason() const { return reason_; }

 private:
  uint64_t offset_;
  std::string context_;
  std::string reason_;
};

}  // namespace libdump::format
