#include "samplers/symbolize/pprof_symbolizer.h"

#include <algorithm>
#include <cstring>

#include <unistd.h>

#include "platform/proc/maps_parser.h"
#include "platform/capture/modules.h"
#include "samplers/symbolize/source_lines.h"
#include "platform/capture/symbol_tables.h"

namespace libdump::samplers {

ProfileSymbolizer::ProfileSymbolizer(pprof::ProfileBuilder& builder) : b_(builder) {
  // Executable, file-backed mappings only: those are where pcs live.
  proc::ForEachMapsLine([this](const proc::MapsLine& m) {
    if (m.executable && !m.path.empty() && m.path[0] != '[') {
      maps_.push_back({m.start, m.end, m.offset, std::string(m.path)});
    }
    return true;
  });
  std::sort(maps_.begin(), maps_.end(), [](const Map& a, const Map& b) { return a.start < b.start; });
  modules_ = std::make_unique<std::vector<capture::Module>>(capture::LoadedModules());
  symbols_ = std::make_unique<capture::Symbolizer>(*modules_);
  lines_ = std::make_unique<SourceLines>();
  // pprof names a profile after its first mapping ("File:"), and Go puts the
  // executable there: add its text mapping before any other.
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    for (const Map& m : maps_) {
      if (m.path == exe) {
        MappingFor(m.start);
        break;
      }
    }
  }
}

ProfileSymbolizer::~ProfileSymbolizer() = default;

uint64_t ProfileSymbolizer::MappingFor(uint64_t pc) {
  auto it = std::upper_bound(maps_.begin(), maps_.end(), pc, [](uint64_t v, const Map& m) { return v < m.start; });
  if (it == maps_.begin()) return 0;
  Map& m = *--it;
  if (pc >= m.end) return 0;
  if (m.id == 0) {
    pprof::Mapping pm;
    pm.start = m.start;
    pm.limit = m.end;
    pm.offset = m.offset;
    pm.file = m.path;
    // The loader and /proc/self/maps may spell a path differently (the main
    // executable is "" to the loader); match by address instead.
    if (const capture::Module* mod = capture::FindModule(*modules_, pc)) pm.build_id = mod->build_id;
    pm.has_functions = true;
    m.id = b_.AddMapping(pm);
  }
  return m.id;
}

std::string ProfileSymbolizer::FunctionName(uintptr_t pc) const {
  const capture::Symbol s = symbols_->Lookup(pc - 1);
  return s.name.empty() ? std::string() : capture::Demangle(s.name);
}

std::vector<uint64_t> ProfileSymbolizer::Locations(std::span<const uintptr_t> pcs) {
  std::vector<uint64_t> ids;
  ids.reserve(pcs.size());
  for (uintptr_t pc : pcs) {
    if (uint64_t id = b_.FindLocation(pc)) {
      ids.push_back(id);
      continue;
    }
    const uint64_t mapping = MappingFor(pc - 1);
    const capture::Symbol s = symbols_->Lookup(pc - 1);
    if (s.name.empty()) {
      ids.push_back(b_.AddLocation(mapping, pc, {}));
      continue;
    }
    // Inlined frames first, each under its own function; the outermost frame
    // keeps the symbol table's (linkage) name, which DWARF may lack.
    std::vector<SourceFrame> frames = lines_->Lookup(pc - 1);
    if (frames.empty()) frames.push_back({});
    std::vector<pprof::Line> lines;
    for (size_t i = 0; i < frames.size(); ++i) {
      const bool outer = i + 1 == frames.size();
      const std::string system = outer ? std::string(s.name) : frames[i].function;
      const std::string name = capture::Demangle(system);
      lines.push_back({b_.AddFunction(name, system, frames[i].file), frames[i].line});
    }
    ids.push_back(b_.AddLocation(mapping, pc, lines));
  }
  return ids;
}

}  // namespace libdump::samplers
