// heapview's and readdump's analysis over any input: the heap graph built from
// a libdump dump, an hprof or a Go dump, its dominators, retained sizes and
// paths, then the pages' queries on a few objects. Every input is either a
// load error or a graph whose every query answers; nothing crashes, hangs or
// allocates beyond the loaders' limits.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "analyze.h"
#include "fuzz_input.h"
#include "histogram.h"
#include "libdump/format/format_error.h"
#include "load.h"
#include "object_detail.h"
#include "paths.h"
#include "report.h"

namespace hg = libdump::heapgraph;

namespace {

void Query(const hg::HeapGraph& g) {
  std::ostringstream sink;
  hg::PrintDominators(sink, g, 5);
  (void)hg::Histogram(g, hg::SortBy::kRetained);
  (void)hg::LeakSuspects(g);
  // The first, middle and last objects: enough to reach every page's query
  // without making a large graph quadratic.
  for (size_t k : {size_t{0}, g.size() / 2, g.size() - 1}) {
    if (k >= g.size()) continue;
    const hg::Index i = static_cast<hg::Index>(k);
    if (g.idom[i] >= g.size() && g.idom[i] != hg::kSuperRoot && g.idom[i] != hg::kNone) __builtin_trap();
    hg::PrintPath(sink, g, i);
    size_t total = 0;
    (void)hg::Referrers(g, i, 0, 10, &total);
    uint64_t bytes = 0;
    (void)hg::ReachableFrom(g, i, 100, &bytes, &total);
    (void)hg::Dominated(g, i);
    (void)hg::ReadObject(g, i, 0, 16);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hg::HeapGraph g;
  try {
    hg::Open(libdump::fuzz::AsFile(data, size), g);
  } catch (const libdump::format::FormatError&) {
    return 0;
  } catch (const hg::LoadError&) {
    return 0;
  }
  Query(g);
  return 0;
}
