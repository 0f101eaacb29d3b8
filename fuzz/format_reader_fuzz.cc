// Fuzz entry point for the reader: any input either parses or raises a
// FormatError; nothing crashes, hangs or allocates beyond the limits.
// Built as a libFuzzer target with clang (-DLIBDUMP_FUZZ=ON) and driven with
// deterministic mutations by format_reader_fuzz_test.cc in every build.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "libdump/format/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    libdump::format::Reader reader(in, {.buffer_size = 256, .max_string = 1 << 16});
    libdump::format::Record r;
    bool whole = false;
    while (reader.Next(r)) {
      if (r.kind == libdump::format::Kind::kObject && (r.object.addr & 1)) {
        reader.Payload(1 << 16);
      }
      whole = r.kind == libdump::format::Kind::kEof;
    }
    if (!whole) __builtin_trap();  // Next() returned false without an eof record
  } catch (const libdump::format::FormatError&) {
  }
  return 0;
}
