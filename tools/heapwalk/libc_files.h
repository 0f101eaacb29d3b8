// What the glibc walker learns from libc's files on disk rather than from the
// image: the link-time addresses of main_arena and mp_ and the TLS offset of
// `tcache` from a .symtab (libc's own, or its debug file under
// DIR/.build-id/xx/yyyy.debug; Debian's libc.so.6 is stripped), and the GOT
// slots of libc's initial-exec TLS variables, through which a thread's
// `tcache` pointer is found from its thread pointer even without symbols.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace libdump::heapwalk {

// An R_X86_64_TPOFF64 relocation against libc's own TLS block: the dynamic
// linker stores the variable's offset from the thread pointer at got.
struct TlsSlot {
  uint64_t got = 0;     // link-time address of the GOT slot
  uint64_t offset = 0;  // the variable's offset inside libc's TLS block
};

struct LibcFiles {
  std::string symbols_from;  // the file whose .symtab gave the symbols, "" when none
  std::optional<uint64_t> main_arena, mp, tcache_tls;
  std::vector<TlsSlot> tls_slots;
};

// libc_path is the module's path in the image, read only when its build-id
// is build_id (or build_id is empty); debug_dirs are searched in order.
LibcFiles ReadLibcFiles(const std::string& libc_path, const std::string& build_id,
                        const std::vector<std::string>& debug_dirs);

}  // namespace libdump::heapwalk
