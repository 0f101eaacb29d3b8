// dumptohprof --binary over any input: a Go dump typed by a fixed program's
// types (go_typing_testutil.h, the program of go_typing_test.cc), breadth
// first from its data roots, stack locals, pointers, slices and interfaces,
// then converted with the typed classes. Bad input is a FormatError; a dump
// whose frames the program does not have is a BinaryMismatch; nothing else.
#include <string>

#include "converter.h"
#include "fuzz_input.h"
#include "go_typing.h"
#include "testing/go_typing_testutil.h"
#include "libdump/format/hprof_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const libdump::dumptohprof::testing::Program program;
  libdump::format::hprof::StringOutput out;
  libdump::dumptohprof::ConvertOptions options;
  options.threads = 1;
  options.max_segment = 1 << 16;
  options.reader = libdump::fuzz::SmallReader();
  options.writer_buffer = 4096;
  options.program = &program.p;
  try {
    libdump::dumptohprof::Convert(libdump::fuzz::AsFile(data, size), out, options);
  } catch (const libdump::format::FormatError&) {
  } catch (const libdump::dumptohprof::BinaryMismatch&) {
  }
  return 0;
}
