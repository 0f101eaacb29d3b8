// The typing pass's C++ DWARF reader over any ELF file (a corrupt or hostile
// binary): open it, read every type it names, the globals, each function's
// locals, the vtables, and expand each global's type over a fixed memory.
// Bad input is a one-line DwarfError or LoadError; nothing else, and bounded.
// Seeded with a small -g program's debug file (fuzz/seeds/cxxdwarf).
#include <cstring>
#include <string>
#include <vector>

#include "cxx_expand.h"
#include "cxx_types.h"
#include "dwarf_loader.h"
#include "fuzz_input.h"

namespace {

// Every word reads as a pointer one word further on.
class Pattern : public libdump::typing::MemoryReader {
 public:
  bool Read(uint64_t addr, void* out, size_t n) const override {
    const uint64_t v = addr + 8;
    std::memcpy(out, &v, n < 8 ? n : 8);
    return n <= 8;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace libdump::typing;
  try {
    auto p = CxxProgram::Open(libdump::fuzz::AsFile(data, size));
    Expander ex([](uint64_t) { return std::pair<CxxProgram*, uint32_t>{nullptr, kNoCxxType}; });
    Pattern mem;
    uint64_t budget = 1 << 16;
    std::vector<Reach> out;
    for (const CxxGlobal& g : p->globals()) {
      Reach r;
      r.addr = g.addr;
      r.program = p.get();
      r.type = g.type;
      ex.Expand(r, mem, budget, out);
      if (out.size() > 4096) out.clear();
      p->LocalsAt(g.addr, g.addr);
      p->VtableType(g.addr + 16);
      p->FunctorOfManager(g.addr);
    }
    for (size_t i = 0; i < p->type_count() && i < 4096; ++i) {
      const CxxType& t = p->type(static_cast<uint32_t>(i));
      p->FindType(t.name);
      Reach r;
      r.program = p.get();
      r.type = static_cast<uint32_t>(i);
      r.naming = Reach::kArray;
      r.count = 3;
      ex.Expand(r, mem, budget, out);
      if (out.size() > 4096) out.clear();
    }
  } catch (const DwarfError&) {
  } catch (const libdump::godwarf::LoadError&) {
  }
  return 0;
}
