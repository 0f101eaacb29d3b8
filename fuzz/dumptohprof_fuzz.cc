// dumptohprof's whole conversion (both passes, the parallel one on two
// threads with small chunks) of any input into memory: a FormatError or an
// hprof file, never a crash, hang or runaway allocation.
#include <string>

#include "converter.h"
#include "fuzz_input.h"
#include "libdump/format/reader.h"
#include "libdump/format/hprof_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = libdump::fuzz::AsFile(data, size);
  libdump::format::hprof::StringOutput out;
  libdump::dumptohprof::ConvertOptions options;
  options.threads = 2;
  options.chunk_bytes = 512;
  options.max_segment = 1 << 16;
  try {
    libdump::dumptohprof::Convert(path, out, options);
  } catch (const libdump::format::FormatError&) {
  }
  return 0;
}
