// readdump's text sections (summary, histogram, threads, one line per
// record) over any input the reader accepts, however far it gets.
#include <sstream>

#include "fuzz_input.h"
#include "type_histogram.h"
#include "records.h"
#include "summary.h"
#include "threads.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace libdump::readdump;
  const libdump::fuzz::InputDump dump(data, size);
  Summary summary;
  Histogram histogram;
  ThreadTable threads;
  std::ostringstream out;
  try {
    auto reader = dump.Open();
    summary.compression = reader->compression();
    summary.dialect = reader->dialect();
    libdump::format::Record r;
    while (reader->Next(r)) {
      summary.Add(r);
      histogram.Add(r);
      threads.Add(r);
      PrintRecordLine(out, r);
    }
  } catch (const libdump::format::FormatError&) {
  }
  // What was read before an error is printed, as readdump does.
  PrintSummary(out, "fuzz", summary);
  PrintHistogram(out, histogram, 0);
  PrintHistogram(out, histogram, 2);
  PrintThreads(out, threads);
  return 0;
}
