#include "analysis_verbs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "flame.h"
#include "heap_graph.h"
#include "growth.h"
#include "growth_report.h"
#include "type_histogram.h"
#include "index_cache.h"
#include "json_writer.h"
#include "libdump/format/reader.h"
#include "load.h"
#include "output_file.h"
#include "progress_line.h"
#include "report.h"
#include "typing.h"
#include "typing_report.h"

namespace libdump::readdump {

namespace {

// Open() through the index cache; an index that cannot be written is worth a
// line (the next open will be as slow), one that was read or written is not.
heapgraph::IndexOptions IndexOptionsOf(const Options& o) {
  heapgraph::IndexOptions io;
  io.enabled = !o.no_index_cache;
  io.dir = o.index_dir;
  return io;
}

void OpenCached(const Options& o, const std::string& path, heapgraph::HeapGraph& g, typing::Stats* stats = nullptr) {
  heapgraph::IndexOptions io = IndexOptionsOf(o);
  io.salt = typing::CacheSalt(o.typing) + (o.include_own ? "+own" : "");
  g.include_own = o.include_own;
  // On a terminal only: readdump's stderr is otherwise for errors.
  heapgraph::ProgressLine line("readdump: indexing " + path, path, ::isatty(2) == 1);
  const heapgraph::Progress progress = line.Callback();
  const heapgraph::IndexReport r = heapgraph::OpenIndexed(
      path, g, progress, io, [&](heapgraph::HeapGraph& h) {
        h.include_own = o.include_own;
        typing::Open(path, h, o.typing, progress, stats);
      });
  line.Clear();
  if (r.use == heapgraph::IndexUse::kLoaded && stats) *stats = typing::Measure(g);
  if (r.use == heapgraph::IndexUse::kUnsaved) std::cerr << "readdump: " << path << ": index not written: " << r.note << '\n';
}

// Opens a dump that is not FILE: the caller prefixes FILE's name to what
// escapes, so this one's errors name their own file here.
bool OpenOther(const Options& o, const std::string& path, heapgraph::HeapGraph& g) {
  try {
    OpenCached(o, path, g);
    return true;
  } catch (const format::FormatError& e) {
    std::cerr << path << ':' << e.what() << '\n';
  } catch (const heapgraph::LoadError& e) {
    std::cerr << path << ": " << e.what() << '\n';
  }
  return false;
}

// --dominators --flame: the folded stacks, whole, to -o's file (or stdout).
int WriteFlame(const Options& o, const heapgraph::HeapGraph& g) {
  std::ostringstream folded;
  heapgraph::WriteFolded(folded, heapgraph::BuildFlame(g));
  struct stat in;
  const bool has_input = ::stat(o.file.c_str(), &in) == 0;
  try {
    tools::OutputFile out(tools::OutputSpec{o.output, o.force, 0644, has_input ? &in : nullptr});
    out.Write(folded.str());
    out.Commit();
  } catch (const tools::OutputError& e) {
    std::cerr << "readdump: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

// Text output states what was left out of it (or put in) first.
void PrintOwnLine(const Options& o, const heapgraph::HeapGraph& g) {
  if (o.json || o.flame) return;  // --flame's stdout is the folded file alone
  if (const std::string line = heapgraph::OwnLine(g); !line.empty()) std::cout << line << '\n';
}

constexpr int kExitGrew = 3;

int RunGrowth(const Options& o) {
  using namespace heapgraph;
  // Every dump stays loaded: the points' retained sizes are read in each.
  std::vector<HeapGraph> graphs(o.series.size() + 1);
  for (size_t k = 0; k < o.series.size(); ++k) {
    if (!OpenOther(o, o.series[k], graphs[k])) return 1;
  }
  OpenCached(o, o.file, graphs.back());
  PrintOwnLine(o, graphs.back());
  std::vector<const HeapGraph*> series;
  for (const HeapGraph& g : graphs) series.push_back(&g);
  const Growth gr = AnalyzeGrowth(series);
  if (o.json) {
    JsonWriter j(std::cout);
    WriteGrowthJson(j, gr, graphs.back(), o.top);
    j.Finish();
  } else {
    PrintGrowth(std::cout, gr, graphs.back(), o.top);
  }
  if (o.has_max_growth) {
    const SeriesClass* c = LargestGrowth(gr);
    if (c && static_cast<uint64_t>(c->bytes_growth()) > o.max_growth) {
      std::cerr << "readdump: " << c->name << " grew by " << c->bytes_growth() << " bytes (more than --max-growth "
                << o.max_growth << ")\n";
      return kExitGrew;
    }
  }
  return 0;
}

}  // namespace

int RunAnalysis(const Options& o) {
  using namespace heapgraph;
  if (std::string why; !ConfigureMemory(o.memory, IndexOptionsOf(o), &why)) {
    std::cerr << "readdump: " << why << '\n';
    return 2;
  }
  if (o.growth) return RunGrowth(o);
  HeapGraph g;
  if (!o.diff_old.empty()) {
    HeapGraph old_heap;
    if (!OpenOther(o, o.diff_old, old_heap)) return 1;
    OpenCached(o, o.file, g);
    PrintOwnLine(o, g);
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
  OpenCached(o, o.file, g, &stats);
  PrintOwnLine(o, g);
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
  if (o.dominators && o.flame) {
    if (const int rc = WriteFlame(o, g)) return rc;
  } else if (o.dominators) {
    if (o.json) {
      JsonWriter j(std::cout);
      const size_t n = o.top && o.top < g.top_retainers.size() ? o.top : g.top_retainers.size();
      WriteDominatorsJson(j, g, g.top_retainers.span(0, n));
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
