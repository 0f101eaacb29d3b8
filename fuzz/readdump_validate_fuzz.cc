// readdump --validate's two passes over any input: every input is either a
// FormatError or a list of problems; nothing crashes, hangs or allocates
// beyond the reader's limits.
#include "fuzz_input.h"
#include "validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const libdump::fuzz::InputDump dump(data, size);
  uint64_t reported = 0;
  try {
    const uint64_t problems = libdump::readdump::ValidateDump(
        [&] { return dump.Open(); }, [&](const libdump::readdump::Problem& p) { reported += !p.message.empty(); });
    if (problems != reported) __builtin_trap();  // every problem has a message
  } catch (const libdump::format::FormatError&) {
  }
  return 0;
}
