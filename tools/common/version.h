// `--version` for every tool: "TOOL (libdump) VERSION", the project version
// CMake passes in as LIBDUMP_VERSION.
#pragma once

#include <ostream>

namespace libdump::tools {

void PrintVersion(std::ostream& out, const char* tool);

}  // namespace libdump::tools
