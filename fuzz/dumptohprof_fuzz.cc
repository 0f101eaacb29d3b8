// dumptohprof's whole conversion (both passes, with small chunks) of any
// input into memory: a FormatError or an hprof file, never a crash, hang or
// runaway allocation. Inputs of odd length take the parallel pass on two
// threads, the others the serial one: a thread started for every input was
// half of the target's time under ASan, and the choice must follow from the
// input for a crash to replay.
#include <string>

#include "converter.h"
#include "fuzz_input.h"
#include "libdump/format/reader.h"
#include "libdump/format/hprof_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = libdump::fuzz::AsFile(data, size);
  libdump::format::hprof::StringOutput out;
  libdump::dumptohprof::ConvertOptions options;
  options.threads = size % 2 == 1 ? 2 : 1;
  options.chunk_bytes = 512;
  options.max_segment = 1 << 16;
  options.reader = libdump::fuzz::SmallReader();
  options.writer_buffer = 4096;
  try {
    libdump::dumptohprof::Convert(path, out, options);
  } catch (const libdump::format::FormatError&) {
  }
  return 0;
}
