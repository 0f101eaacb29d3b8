#include "own_line.h"

namespace libdump::tools {

std::string OwnLine(uint64_t objects, uint64_t bytes, bool included) {
  if (objects == 0) return "";
  return "libdump's own: " + std::to_string(objects) + " objects, " + std::to_string(bytes) + " bytes, " +
         (included ? "included (--include-own)" : "excluded; --include-own to show");
}

}  // namespace libdump::tools
