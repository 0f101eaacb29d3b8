// Go dumps (docs/GODUMP.md) join the typing pass: with --binary PROG, the Go
// types PROG's DWARF gives the objects (classplan's go_typing, one
// implementation for every tool) name them, as dumptohprof --binary names its
// hprof classes. The dump's synthetic layouts ("obj24[0,16]") are no names:
// the loader leaves Go classes unnamed, so this rule may name them.
#include "go_rule.h"

#include <stdexcept>

#include "dump_catalog.h"
#include "dwarf_loader.h"
#include "go_class_plan.h"
#include "go_typing.h"
#include "libdump/format/hprof_writer.h"
#include "libdump/format/reader.h"
#include "type_plan.h"

namespace libdump::typing {

void ApplyGoRule(Context& ctx) {
  HeapGraph& g = ctx.graph();
  if (!g.go || ctx.options().binaries.empty()) return;
  const std::string& binary = ctx.options().binaries.front();
  godwarf::GoProgram program(ctx.ptr_size());
  try {
    program = godwarf::LoadGoProgram(binary);
  } catch (const godwarf::LoadError& e) {
    throw std::runtime_error(binary + ": " + e.what());
  }
  dumptohprof::DumpCatalog catalog;
  {
    auto reader = format::Reader::Open(g.path);
    catalog.Scan(*reader, [](uint64_t) {});
  }
  const dumptohprof::GoTypes types = dumptohprof::TypeGoObjects(g.path, catalog, program);
  // The class of each typing, named as the hprof names it.
  std::vector<uint32_t> cls(types.typings.size(), UINT32_MAX);
  const dumptohprof::AddressIndex& index = catalog.index();
  for (size_t pos = 0; pos < index.size() && pos < types.of_object.size(); ++pos) {
    const uint32_t k = types.of_object[pos];
    if (k == 0 || k >= types.typings.size()) continue;
    const Index i = g.Find(index.StartAt(pos));
    if (i == kNone) continue;
    if (cls[k] == UINT32_MAX) {
      const dumptohprof::TypePlan p = dumptohprof::PlanGoClass(program, types.typings[k], ctx.ptr_size());
      const std::string hprof_name = p.regular == dumptohprof::Shape::kInstance    ? p.name
                                     : p.regular == dumptohprof::Shape::kWordArray ? "[L" + p.name + ";"
                                                                                   : format::hprof::PrimitiveArrayClassName(p.prim);
      cls[k] = ctx.Class(dumptohprof::DisplayName(hprof_name), Rule::kDwarf);
    }
    ctx.Name(i, cls[k], Rule::kDwarf);
  }
}

}  // namespace libdump::typing
