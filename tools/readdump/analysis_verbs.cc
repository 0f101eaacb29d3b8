#include "analysis_verbs.h"

#include <iostream>

#include "heap_graph.h"
#include "histogram.h"
#include "json_writer.h"
#include "libdump/format/reader.h"
#include "load.h"
#include "report.h"
#include "typing.h"
#include "typing_report.h"

namespace libdump::readdump {

int RunAnalysis(const Options& o) {
  using namespace heapgraph;
  HeapGraph g;
  if (!o.diff_old.empty()) {
    HeapGraph old_heap;
    try {
      typing::Open(o.diff_old, old_heap, o.typing);
    } catch (const format::FormatError& e) {
      // The caller prefixes the NEW file's name; this error is OLD's.
      std::cerr << o.diff_old << ':' << e.what() << '\n';
      return 1;
    } catch (const LoadError& e) {
      std::cerr << o.diff_old << ": " << e.what() << '\n';
      return 1;
    }
    typing::Open(o.file, g, o.typing);
    const auto rows = Diff(old_heap, g);
    if (o.json) {
      JsonWriter j(std::cout);
      WriteDiffJson(j, rows, o.top);
      j.Finish();
    } else {
      PrintDiff(std::cout, rows, o.top);
    }
    return 0;
  }
  typing::Stats stats;
  typing::Open(o.file, g, o.typing, {}, &stats);
  if (o.classes) {
    if (o.json) {
      JsonWriter j(std::cout);
      j.BeginObject();
      j.Key("typing");
      typing::WriteTypedFractionJson(j, stats);
      j.Key("classes");
      typing::WriteClassesJson(j, g, o.top);
      j.EndObject();
      j.Finish();
    } else {
      typing::PrintTypedFraction(std::cout, stats);
      std::cout << '\n';
      typing::PrintClasses(std::cout, g, o.top);
    }
  }
  if (o.leaks) {
    const typing::Leaks leaks = typing::FindLeaks(g, o.top ? o.top : 20);
    if (o.json) {
      JsonWriter j(std::cout);
      typing::WriteLeaksJson(j, g, leaks, o.top);
      j.Finish();
    } else {
      typing::PrintLeaks(std::cout, g, leaks, o.top);
    }
  }
  if (o.dominators) {
    if (o.json) {
      JsonWriter j(std::cout);
      const size_t n = o.top && o.top < g.top_retainers.size() ? o.top : g.top_retainers.size();
      WriteDominatorsJson(j, g, {g.top_retainers.data(), n});
      j.Finish();
    } else {
      PrintDominators(std::cout, g, o.top);
    }
  }
  if (!o.path_to_root.empty()) {
    uint64_t id;
    const Index i = ParseId(o.path_to_root, &id) ? g.Find(id) : kNone;
    if (i == kNone) {
      std::cerr << o.file << ": no object " << o.path_to_root << '\n';
      return 1;
    }
    if (o.json) {
      JsonWriter j(std::cout);
      WritePathJson(j, g, i);
      j.Finish();
    } else {
      PrintPath(std::cout, g, i);
    }
  }
  return 0;
}

}  // namespace libdump::readdump
