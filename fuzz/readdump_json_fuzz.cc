// readdump --json --records --validate --histogram --threads over any input:
// the document is always closed and every string escaped, whatever the
// records hold.
#include <sstream>

#include "fuzz_input.h"
#include "type_histogram.h"
#include "json_writer.h"
#include "records.h"
#include "summary.h"
#include "threads.h"
#include "validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace libdump::readdump;
  const libdump::fuzz::InputDump dump(data, size);
  std::ostringstream out;
  JsonWriter json(out);
  Summary summary;
  Histogram histogram;
  ThreadTable threads;
  json.BeginObject();
  json.Key("records");
  json.BeginArray();
  try {
    auto reader = dump.Open();
    libdump::format::Record r;
    while (reader->Next(r)) {
      summary.Add(r);
      histogram.Add(r);
      threads.Add(r);
      WriteRecordJson(json, r);
    }
  } catch (const libdump::format::FormatError&) {
  }
  json.EndArray();
  json.Key("problems");
  json.BeginArray();
  try {
    ValidateDump([&] { return dump.Open(); }, [&](const Problem& p) {
      json.BeginObject();
      json.Key("at");
      json.Uint(p.offset);
      json.Key("message");
      json.String(p.message);
      json.EndObject();
    });
  } catch (const libdump::format::FormatError& e) {
    json.String(e.what());
  }
  json.EndArray();
  json.Key("summary");
  WriteSummaryJson(json, summary);
  json.Key("histogram");
  WriteHistogramJson(json, histogram, 0);
  json.Key("threads");
  WriteThreadsJson(json, threads);
  json.EndObject();
  // A closed document: balanced outside strings (escapes checked by readdump's tests).
  const std::string s = out.str();
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      else if (static_cast<unsigned char>(c) < 0x20) __builtin_trap();  // a raw control character
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) __builtin_trap();
    }
  }
  if (depth != 0 || in_string) __builtin_trap();
  return 0;
}
