// readdump --validate and dumptohprof hold one rule set: what validates
// converts. Any input that validate reads to the end with no problem must
// convert, and any input whose reading validate stops with a FormatError must
// stop the converter too (it reads the same records). A disagreement traps;
// so does anything the two harnesses of each tool catch.
#include <string>

#include "converter.h"
#include "fuzz_input.h"
#include "libdump/format/hprof_writer.h"
#include "validate.h"

namespace {

enum class Verdict { kClean, kProblems, kBadInput };

Verdict Validate(const uint8_t* data, size_t size) {
  const libdump::fuzz::InputDump dump(data, size);
  try {
    const uint64_t problems = libdump::readdump::ValidateDump([&] { return dump.Open(); },
                                                              [](const libdump::readdump::Problem&) {});
    return problems == 0 ? Verdict::kClean : Verdict::kProblems;
  } catch (const libdump::format::FormatError&) {
    return Verdict::kBadInput;
  }
}

bool Converts(const uint8_t* data, size_t size) {
  libdump::format::hprof::StringOutput out;
  libdump::dumptohprof::ConvertOptions options;
  options.threads = 1;
  options.max_segment = 1 << 16;
  options.reader = libdump::fuzz::SmallReader();  // the reader validate reads with
  options.writer_buffer = 4096;
  try {
    libdump::dumptohprof::Convert(libdump::fuzz::AsFile(data, size), out, options);
    return true;
  } catch (const libdump::format::FormatError&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Verdict v = Validate(data, size);
  const bool converts = Converts(data, size);
  if (v == Verdict::kClean && !converts) __builtin_trap();   // validated, yet refused
  if (v == Verdict::kBadInput && converts) __builtin_trap();  // unreadable, yet converted
  return 0;
}
