// The typing pass (docs/TYPING.md) over any input: a dump is loaded, typed by
// every rule (roots named from the modules it names, shapes, holders, sizes),
// analysed, and its typed tables and leaks are printed. Every input is a load
// error or a typed graph; nothing crashes, hangs or allocates beyond the
// loaders' limits, and each object ends with one class of one rule.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_input.h"
#include "libdump/format/format_error.h"
#include "typing.h"
#include "typing_report.h"

namespace hg = libdump::heapgraph;
namespace ty = libdump::typing;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hg::HeapGraph g;
  ty::Stats stats;
  try {
    ty::Open(libdump::fuzz::AsFile(data, size), g, ty::Options{}, {}, &stats);
  } catch (const libdump::format::FormatError&) {
    return 0;
  } catch (const hg::LoadError&) {
    return 0;
  }
  uint64_t counted = 0;
  for (uint64_t n : stats.objects) counted += n;
  if (counted != g.size()) __builtin_trap();
  for (hg::Index i = 0; i < g.size(); ++i) {
    if (g.cls[i] >= g.classes.size()) __builtin_trap();
  }
  std::ostringstream sink;
  ty::PrintTypedFraction(sink, stats);
  ty::PrintClasses(sink, g, 10);
  const ty::Leaks leaks = ty::FindLeaks(g, 5);
  ty::PrintLeaks(sink, g, leaks, 5);
  return 0;
}
