// What every fuzz target shares: the input as a dump the reader can open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "libdump/format/reader.h"

namespace libdump::fuzz {

// Small buffers and string limits, so that a few bytes of input cannot ask
// for much memory and refills happen often (more paths in the reader).
inline format::ReaderOptions SmallReader() { return {.buffer_size = 256, .max_string = 1 << 16}; }

// A reader over its own copy of the input (the tools read a dump twice).
class InputDump {
 public:
  InputDump(const uint8_t* data, size_t size) : bytes_(reinterpret_cast<const char*>(data), size) {}
  std::shared_ptr<format::Reader> Open() const {
    struct Owned {
      std::istringstream in;
      format::Reader reader;
      explicit Owned(const std::string& s) : in(s), reader(in, SmallReader()) {}
    };
    auto owned = std::make_shared<Owned>(bytes_);
    return std::shared_ptr<format::Reader>(owned, &owned->reader);
  }

 private:
  std::string bytes_;
};

}  // namespace libdump::fuzz
