#include "version.h"

namespace libdump::tools {

void PrintVersion(std::ostream& out, const char* tool) { out << tool << " (libdump) " << LIBDUMP_VERSION << '\n'; }

}  // namespace libdump::tools
