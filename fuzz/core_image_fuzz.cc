// The core file reader (tools/procimage/core_image.cc) over any bytes: the
// ELF header's checks, the program headers, every note (NT_PRSTATUS,
// NT_PRPSINFO, NT_AUXV, NT_FILE), the mappings put together from PT_LOADs
// and NT_FILE, the modules from the headers the core holds, and reads at
// every mapping's ends and middle. No file on disk is opened: a hostile core
// names any path. A bad core ends in one CoreError of one line; a core that
// opens keeps its promises (mappings sorted and disjoint, reads no longer
// than asked, damage in lines), or the harness traps.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core_image.h"

namespace {

void OneLine(const std::string& s) {
  if (s.find('\n') != std::string::npos) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using libdump::procimage::CoreImage;
  libdump::procimage::CoreOptions options;
  options.use_disk = false;
  std::unique_ptr<CoreImage> core;
  try {
    core = CoreImage::FromBytes("fuzz.core", std::string(reinterpret_cast<const char*>(data), size), options);
  } catch (const libdump::procimage::CoreError& e) {
    OneLine(e.what());
    return 0;
  }
  for (const auto& d : core->Damage()) OneLine(d);
  uint8_t buf[512];
  uint64_t last_end = 0;
  for (const auto& m : core->Mappings()) {
    if (m.start >= m.end || m.start < last_end) __builtin_trap();
    last_end = m.end;
    const uint64_t mid = m.start + (m.end - m.start) / 2;
    for (const uint64_t at : {m.start, mid, m.end - 1})
      if (core->Read(at, buf, sizeof buf) > sizeof buf) __builtin_trap();
    if (core->FindMapping(mid) != &m) __builtin_trap();
    core->FindModule(m.start);
  }
  for (const auto& t : core->Threads()) core->Read(t.sp(), buf, sizeof buf);
  for (const auto& mod : core->Modules())
    if (mod.start > mod.end) __builtin_trap();
  return 0;
}
