// What every fuzz target shares: the input as a dump the reader can open.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

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

// The input as a file, for the tools that open a path (they read twice, in
// chunks, or map it): one memfd per process, rewritten for each input, named
// by its /proc/self/fd path. No file is written.
inline std::string AsFile(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("libdump_fuzz_input", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0) __builtin_trap();  // the harness failed, not the code
  for (size_t done = 0; done < size;) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace libdump::fuzz
