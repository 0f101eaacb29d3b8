#include "vtable_types.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <typeinfo>

namespace libdump::heapdump {

namespace {

// One class of each RTTI kind, to read the ABI's type_info vtables from.
struct RttiBase { virtual ~RttiBase() = default; };
struct RttiSingle : RttiBase {};
struct RttiOther { virtual ~RttiOther() = default; };
struct RttiMulti : RttiBase, RttiOther {};

uint64_t VptrOf(const std::type_info& ti) {
  uint64_t v;
  std::memcpy(&v, &ti, sizeof v);
  return v;
}

// The first word of any object, and words next to vtables: not instrumented,
// as they may lie in memory ASan considers off limits (see heap_dump_writer.cc).
__attribute__((no_sanitize("address"))) uint64_t Load(uint64_t addr) {
  return *reinterpret_cast<const volatile uint64_t*>(addr);
}

}  // namespace

VtableRecognizer::VtableRecognizer()
    : class_ti_vtable_(VptrOf(typeid(RttiBase))),
      si_class_ti_vtable_(VptrOf(typeid(RttiSingle))),
      vmi_class_ti_vtable_(VptrOf(typeid(RttiMulti))) {}

uint64_t VtableRecognizer::TypeInfoOf(uint64_t vptr, const capture::MemoryMap& memory) const {
  // A vtable pointer points past the offset-to-top and RTTI words, into
  // read-only data (relocated vtables live in RELRO, which is read-only too).
  if (vptr < 16 || (vptr & 7) != 0) return 0;
  const capture::Mapping* m = memory.Find(vptr - 16);
  if (m == nullptr || !m->readable || m->writable || vptr > m->end - 8) return 0;
  const uint64_t ti = Load(vptr - 8);
  if ((ti & 7) != 0 || !memory.Readable(ti, 16)) return 0;
  const uint64_t ti_vptr = Load(ti);
  if (ti_vptr != class_ti_vtable_ && ti_vptr != si_class_ti_vtable_ && ti_vptr != vmi_class_ti_vtable_) {
    return 0;
  }
  // The class's type_info holds its mangled name; make sure it is readable.
  const uint64_t name = Load(ti + 8);
  return memory.Readable(name, 1) ? ti : 0;
}

std::string VtableRecognizer::ClassName(uint64_t type_info) {
  const auto* ti = reinterpret_cast<const std::type_info*>(type_info);
  const char* mangled = ti->name();
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (d == nullptr) return mangled;
  std::string out(d);
  std::free(d);
  return out;
}

}  // namespace libdump::heapdump
