// Opens a dump, runs the typing pass's DWARF rule on it and prints, per
// class, its rule, object count, bytes and the sum of its objects' element
// counts, then the fraction of bytes the dump and DWARF rules named, for
// tests/typing/dwarf_rule_test.sh to compare with the program's own counts.
//   dwarf_rule_check DUMP BINARY
// With --open, times the DWARF reader opening one ELF file (seconds, peak
// resident memory, what it found): bench/typing/dwarf_big_binary.sh.
//   dwarf_rule_check --open ELF
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "cxx_types.h"

#include "load.h"
#include "typing.h"

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--open") == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      auto p = libdump::typing::CxxProgram::Open(argv[2]);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      std::printf("open: %.2f s, peak %.0f MB resident, %zu globals, %zu functions\n", s, u.ru_maxrss / 1024.0,
                  p->globals().size(), p->function_count());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dwarf_rule_check: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: dwarf_rule_check DUMP BINARY\n");
    return 2;
  }
  using namespace libdump;
  heapgraph::HeapGraph g;
  typing::Options o;
  o.binaries = {argv[2]};
  try {
    heapgraph::Load(argv[1], g);
    // The DWARF rule alone: the weaker rules would add their own objects to
    // the same class names (a string buffer its shape proves).
    typing::Context ctx(g, o);
    typing::ApplyDwarfRule(ctx);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dwarf_rule_check: %s\n", e.what());
    return 1;
  }
  struct Row {
    const char* rule;
    uint64_t count = 0, bytes = 0, elements = 0;
  };
  std::map<std::string, Row> rows;
  uint64_t total = 0, named = 0;
  for (heapgraph::Index i = 0; i < g.size(); ++i) {
    const heapgraph::ClassInfo& c = g.classes[g.cls[i]];
    Row& r = rows[c.name];
    r.rule = typing::RuleName(c.named_by);
    ++r.count;
    r.bytes += g.Size(i);
    if (auto it = g.elements.find(i); it != g.elements.end()) r.elements += it->second;
    total += g.Size(i);
    if (c.named_by == typing::Rule::kDump || c.named_by == typing::Rule::kDwarf) named += g.Size(i);
  }
  for (const auto& [name, r] : rows) {
    std::printf("class\t%s\t%llu\t%llu\t%llu\t%s\n", r.rule, (unsigned long long)r.count, (unsigned long long)r.bytes,
                (unsigned long long)r.elements, name.c_str());
  }
  std::printf("named\t%.4f\t%llu\t%llu\n", total ? double(named) / double(total) : 0.0, (unsigned long long)named,
              (unsigned long long)total);
  return 0;
}
